/**
 * msgpackr options lmdb-js passes on but does not declare. A stored 64-bit integer reads as a
 * number, never a BigInt JSON cannot encode (data stored before the wire codec turned 64-bit
 * integers into numbers stays readable). Values are written as plain maps, not msgpackr
 * records: without shared structures a record carries its definition in every value, and
 * decoding it builds a reader each time (2.6x slower to decode, same size). Values written as
 * records by earlier versions still read the same.
 */
export const CODEC_OPTIONS = { int64AsNumber: true, useRecords: false, mapsAsObjects: true };
