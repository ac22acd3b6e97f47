/** The playground page (served at `GET /`). */
export const PLAYGROUND_HTML = `<!doctype html><title>Switchboard playground</title><script type="module" src="/playground/app.js"></script>`;
