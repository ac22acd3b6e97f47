/** The playground page's script (served at `GET /playground/app.js`). */
export const PLAYGROUND_JS = `import * as sdk from "/sdk/client.js";\nconsole.log(sdk);\n`;
