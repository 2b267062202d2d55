/**
 * Splits a stream of concatenated JSON objects (the orchestrator's watch responses: one object
 * per line, but chunk boundaries fall anywhere and several objects may share a chunk) into
 * complete object texts. Tracks brace depth outside strings, so it does not depend on newlines.
 */
export class JsonObjectSplitter {
  #buf = '';
  #depth = 0;
  #inString = false;
  #escaped = false;
  #start = -1;
  /** Scan position in #buf. */
  #pos = 0;

  /** Feeds a chunk; returns the objects it completed, parsed. Throws on malformed JSON. */
  push(chunk: string): unknown[] {
    this.#buf += chunk;
    const out: unknown[] = [];
    const buf = this.#buf;
    for (let i = this.#pos; i < buf.length; i++) {
      const c = buf.charCodeAt(i);
      if (this.#inString) {
        if (this.#escaped) this.#escaped = false;
        else if (c === 0x5c /* \ */) this.#escaped = true;
        else if (c === 0x22 /* " */) this.#inString = false;
        continue;
      }
      if (c === 0x22) {
        this.#inString = true;
      } else if (c === 0x7b /* { */) {
        if (this.#depth === 0) this.#start = i;
        this.#depth++;
      } else if (c === 0x7d /* } */) {
        this.#depth--;
        if (this.#depth === 0) {
          out.push(JSON.parse(buf.slice(this.#start, i + 1)));
          this.#start = -1;
        } else if (this.#depth < 0) {
          throw new SyntaxError('unbalanced "}" in watch stream');
        }
      } else if (this.#depth === 0 && c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) {
        throw new SyntaxError(`unexpected ${JSON.stringify(buf[i])} between watch events`);
      }
    }
    // Keep only the unfinished object.
    if (this.#start >= 0) {
      this.#buf = buf.slice(this.#start);
      this.#pos = this.#buf.length;
      this.#start = 0;
    } else {
      this.#buf = '';
      this.#pos = 0;
    }
    return out;
  }
}
