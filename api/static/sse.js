// Server-sent events from a fetch() body: bytes in, complete events out.
// A network read can end anywhere (inside a UTF-8 character, a line or an event), so text and
// lines are buffered until an event's blank line arrives; multi-line `data:` fields are joined
// with "\n" as the EventSource specification says.

export class SseParser {
  constructor() {
    this.decoder = new TextDecoder("utf-8");
    this.buffer = "";
    this.data = [];
    this.event = "";
  }

  /** Feed bytes (Uint8Array) or text; returns the events completed by it: [{event, data}]. */
  feed(chunk) {
    this.buffer += typeof chunk === "string" ? chunk : this.decoder.decode(chunk, { stream: true });
    const events = [];
    let newline;
    while ((newline = this.buffer.search(/\r\n|\r|\n/)) !== -1) {
      // a lone "\r" at the end may be the first half of "\r\n": wait for the next read
      if (this.buffer[newline] === "\r" && newline === this.buffer.length - 1) break;
      const width = this.buffer.startsWith("\r\n", newline) ? 2 : 1;
      const line = this.buffer.slice(0, newline);
      this.buffer = this.buffer.slice(newline + width);
      const done = this.line(line);
      if (done) events.push(done);
    }
    return events;
  }

  /** The event still open when the body ends (a server that omits the final blank line). */
  end() {
    const rest = this.buffer + this.decoder.decode();
    this.buffer = "";
    const events = [];
    if (rest) {
      const done = this.line(rest);
      if (done) events.push(done);
    }
    const last = this.line("");
    if (last) events.push(last);
    return events;
  }

  line(line) {
    if (line === "") {
      if (this.data.length === 0) return null;
      const event = { event: this.event || "message", data: this.data.join("\n") };
      this.data = [];
      this.event = "";
      return event;
    }
    if (line.startsWith(":")) return null; // a comment (keep-alive)
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") this.data.push(value);
    else if (field === "event") this.event = value;
    return null;
  }
}
