// The readline client: the second pure-JavaScript peer of the benchmark, and
// the way the anchor SDKs read their CLI (the Codex SDK and the Claude Agent
// SDK both do `for await (const line of readline.createInterface({input:
// child.stdout}))`, then one `JSON.parse` per line).
//
// Only the reading differs from bench/pure-js-client.mjs: this class extends
// it, so the protocol logic is the same code (hello check, frame
// classification, sequence check, pending table of at most 64, event buffer
// of at most 256 frames and 64 MiB with the one overflow report, 40 MiB frame
// bound, stderr tail), and its events reach the application as the same
// `{type, seq, name, data}` objects through the same queue.
//
// What readline cannot do, and so this client does not either (it is how the
// anchors behave, not a choice made to slow it down):
// - the 40 MiB bound is checked on each complete line, not while the line
//   grows: readline keeps a partial line of any length;
// - UTF-8 is not validated: readline's decoder turns a bad byte into U+FFFD;
// - a last line without its newline is handed over like any other line;
// - the event buffer's byte bound counts a line's UTF-16 length (equal to
//   its UTF-8 size for ASCII, smaller otherwise; the bench sends ASCII).
import { createInterface } from "node:readline";
import { MAX_FRAME_BYTES, PureClient } from "./pure-js-client.mjs";

export class ReadlineClient extends PureClient {
  _readStdout(child) {
    const rl = createInterface({ input: child.stdout, crlfDelay: Infinity });
    const read = async () => {
      try {
        for await (const line of rl) {
          // After a fatal error the lines are still read (and ignored), so
          // that stdout reaches its end and its descriptor is closed.
          if (this.phase === "failed" || this.phase === "closed") continue;
          if (this._textLine(line) && this.waiters.length !== 0) this._pump();
        }
      } catch (e) {
        this._fail(Object.assign(new Error(`reading koma's stdout failed: ${e.message}`), { code: "transport_failure" }));
        return;
      }
      // After the last line has been handled (not at stdout's "end", which
      // can come while lines still wait in the iterator's queue).
      this._onEnd();
    };
    void read(); // it catches what it can fail with
  }

  /** One line as readline hands it over (decoded, without its terminator). False: stop (fatal). */
  _textLine(line) {
    const len = line.length;
    if (len === 0) return this._protocolError("a blank line on stdout");
    // A UTF-16 length is at most the UTF-8 size, and the UTF-8 size at most 3× it.
    if (len > MAX_FRAME_BYTES || (len > MAX_FRAME_BYTES / 3 && Buffer.byteLength(line) > MAX_FRAME_BYTES)) {
      return this._protocolError(`a stdout frame is over ${MAX_FRAME_BYTES} bytes (40 MiB)`);
    }
    if (line.charCodeAt(0) === 0xfeff) return this._protocolError("a stdout line starts with a byte-order mark", line, 0, len);
    let f;
    try {
      f = JSON.parse(line);
    } catch (e) {
      return this._protocolError(`a stdout line is not one complete JSON object (${e.message})`, line, 0, len);
    }
    return this._frame(f, len, line, 0, len);
  }
}
