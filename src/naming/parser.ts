import { isHexCode, isJavaDigit, isJavaWhitespace, isShowableCode } from './chars.js';
import { AnyElem, Dentry, Dtab, Prefix, type PrefixElem } from './dtab.js';
import { DtabTooLargeError, NamingParseError } from './errors.js';
import { MAX_DTAB_CHARS, MAX_DTAB_DENTRIES, MAX_NAME_TREE_NESTING } from './limits.js';
import { type NameTree, Empty, Fail, Neg, type Weighted, DEFAULT_WEIGHT, leaf, weighted } from './name-tree.js';
import { Path } from './path.js';

/** Finagle uses U+FFFF as its end-of-input sentinel; a literal U+FFFF therefore reads as the end. */
const EOI = '\uffff';

/**
 * A recursive-descent reader for the naming grammar (paths, prefixes, name trees, dentries and
 * dtabs) that reproduces Finagle's `NameTreeParsers` exactly, including its error messages.
 */
class Reader {
  readonly #str: string;
  #idx = 0;
  #nesting = 0;
  readonly #located: boolean;

  constructor(str: string, located = false) {
    this.#str = str;
    this.#located = located;
  }

  get #atEnd(): boolean {
    return this.#idx >= this.#str.length;
  }

  #peek(): string {
    return this.#atEnd ? EOI : (this.#str[this.#idx] as string);
  }

  #next(): void {
    this.#idx++;
  }

  #maybeEat(c: string): boolean {
    if (this.#peek() !== c) return false;
    this.#next();
    return true;
  }

  #eat(c: string): void {
    if (this.#peek() !== c) this.#illegal(`'${c}'`, this.#peek());
    this.#next();
  }

  /** Skips Java whitespace and `#` comments (to and including the next newline). */
  eatWhitespace(): void {
    for (;;) {
      while (!this.#atEnd && isJavaWhitespace(this.#str.charCodeAt(this.#idx))) this.#next();
      if (this.#peek() !== '#') return;
      while (!this.#atEnd && this.#peek() !== '\n') this.#next();
      if (!this.#atEnd) this.#next();
    }
  }

  eatEnd(): void {
    if (!this.#atEnd) this.#illegal('end of input', this.#peek());
  }

  /**
   * Finagle's message quotes the whole input with the offending character in brackets. A located
   * reader (a config file's dtab, a resolver body) given several lines names the line and column
   * instead and quotes only that line, so the message stays readable for thousands of lines.
   */
  #illegal(expected: string, found: string): never {
    const s = this.#str;
    const i = this.#idx;
    if (!this.#located || !s.includes('\n')) {
      const foundText = found === EOI ? 'end of input' : `'${found}'`;
      const display = this.#atEnd ? `${s.slice(0, i)}[]` : `${s.slice(0, i)}[${s[i]}]${s.slice(i + 1)}`;
      throw new NamingParseError(`${expected} expected but ${foundText} found at '${display}'`, undefined, i);
    }
    const foundText = found === EOI ? 'end of input' : found === '\n' ? 'end of line' : `'${found}'`;
    const lineStart = i === 0 ? 0 : s.lastIndexOf('\n', i - 1) + 1;
    const nl = s.indexOf('\n', i);
    const lineEnd = nl < 0 ? s.length : nl;
    let line = 1;
    for (let k = s.indexOf('\n'); k >= 0 && k < lineStart; k = s.indexOf('\n', k + 1)) line++;
    const at = i >= lineEnd ? '[]' : `[${s[i]}]${s.slice(i + 1, lineEnd)}`;
    const display = `${s.slice(lineStart, i)}${at}`.replace(/\r$/, '');
    throw new NamingParseError(`${expected} expected but ${foundText} found at line ${line}, column ${i - lineStart + 1}: '${display}'`, undefined, i);
  }

  #isLabelChar(c: string): boolean {
    return c === '\\' || (c.length === 1 && isShowableCode(c.charCodeAt(0)));
  }

  #parseHexChar(): number {
    const c = this.#peek();
    if (c === EOI || !isHexCode(c.charCodeAt(0))) this.#illegal('hex char', c);
    this.#next();
    return Number.parseInt(c, 16);
  }

  /** One label as a binary string: showable chars verbatim, `\xHH` as one raw byte. */
  #parseLabel(): string {
    let bytes = '';
    do {
      const c = this.#peek();
      if (c !== EOI && isShowableCode(c.charCodeAt(0))) {
        bytes += c;
        this.#next();
      } else if (c === '\\') {
        this.#next();
        this.#eat('x');
        const hi = this.#parseHexChar();
        const lo = this.#parseHexChar();
        bytes += String.fromCharCode((hi << 4) | lo);
      } else {
        this.#illegal('label char', c);
      }
    } while (this.#isLabelChar(this.#peek()));
    return bytes;
  }

  parsePath(): Path {
    this.eatWhitespace();
    this.#eat('/');
    if (!this.#isLabelChar(this.#peek())) return Path.empty;
    const labels = [this.#parseLabel()];
    while (this.#maybeEat('/')) labels.push(this.#parseLabel());
    return Path.fromElems(labels);
  }

  parsePrefix(): Prefix {
    this.eatWhitespace();
    this.#eat('/');
    const first = this.#peek();
    if (!(this.#isLabelChar(first) || first === '*')) return Prefix.empty;
    const elems: PrefixElem[] = [];
    do {
      elems.push(this.#maybeEat('*') ? AnyElem : this.#parseLabel());
    } while (this.#maybeEat('/'));
    return new Prefix(elems);
  }

  parseTree(): NameTree<Path> {
    const trees = [this.#parseTree1()];
    for (;;) {
      this.eatWhitespace();
      if (!this.#maybeEat('|')) break;
      trees.push(this.#parseTree1());
    }
    return trees.length === 1 ? (trees[0] as NameTree<Path>) : { type: 'alt', trees };
  }

  /** `&`-joined terms; a lone term's weight is dropped, as in Finagle. */
  #parseTree1(): NameTree<Path> {
    const trees = [this.#parseWeighted()];
    for (;;) {
      this.eatWhitespace();
      if (!this.#maybeEat('&')) break;
      trees.push(this.#parseWeighted());
    }
    return trees.length === 1 ? (trees[0] as Weighted<Path>).tree : { type: 'union', trees };
  }

  #parseWeighted(): Weighted<Path> {
    this.eatWhitespace();
    let weight = DEFAULT_WEIGHT;
    const c = this.#peek();
    if (c === '.' || (c !== EOI && isJavaDigit(c))) {
      weight = this.#parseNumber();
      this.eatWhitespace();
      this.#eat('*');
      this.eatWhitespace();
    }
    return weighted(weight, this.#parseSimple());
  }

  #parseNumber(): number {
    let text = '';
    let seenDot = false;
    for (;;) {
      const c = this.#peek();
      if (c === '.') {
        if (seenDot) this.#illegal('number char', c);
        seenDot = true;
      } else if (c === EOI || !isJavaDigit(c)) {
        break;
      }
      text += c;
      this.#next();
    }
    if (text === '.') this.#illegal('weight', this.#peek());
    // Java's Double.parseDouble accepts only ASCII digits: other Unicode digits pass the
    // grammar's isDigit test and then fail here, as they do in Finagle.
    if (!/^[0-9]*\.?[0-9]*$/.test(text)) {
      throw new NamingParseError(`For input string: "${text}"`);
    }
    return Number(text);
  }

  #parseSimple(): NameTree<Path> {
    this.eatWhitespace();
    const c = this.#peek();
    switch (c) {
      case '(': {
        // The grammar recurses per parenthesis: bounded, so no input can exhaust the stack.
        if (++this.#nesting > MAX_NAME_TREE_NESTING) {
          throw new DtabTooLargeError(`name tree nested deeper than ${MAX_NAME_TREE_NESTING} parentheses`);
        }
        this.#next();
        const tree = this.parseTree();
        this.eatWhitespace();
        this.#eat(')');
        this.#nesting--;
        return tree;
      }
      case '/':
        return leaf(this.parsePath());
      case '!':
        this.#next();
        return Fail;
      case '~':
        this.#next();
        return Neg;
      case '$':
        this.#next();
        return Empty;
      default:
        return this.#illegal('simple', c);
    }
  }

  parseDentry(): Dentry {
    const prefix = this.parsePrefix();
    this.eatWhitespace();
    this.#eat('=');
    this.#eat('>');
    return new Dentry(prefix, this.parseTree());
  }

  /** `;`-separated dentries; a single trailing `;` is allowed, an empty entry is not. */
  parseDtab(): Dtab {
    const dentries: Dentry[] = [];
    do {
      this.eatWhitespace();
      if (!this.#atEnd) {
        checkDentryCount(dentries.length + 1);
        dentries.push(this.parseDentry());
        this.eatWhitespace();
      }
    } while (this.#maybeEat(';'));
    return dentries.length === 0 ? Dtab.empty : new Dtab(dentries);
  }
}

function readAll<T>(text: string, parse: (r: Reader) => T, located = false): T {
  const r = new Reader(text, located);
  const value = parse(r);
  r.eatWhitespace();
  r.eatEnd();
  return value;
}

/** Parses a path such as `/svc/foo` or `/#/io.prx.fs/\x20x`. Throws `NamingParseError`. */
export function readPath(text: string): Path {
  return readAll(text, (r) => r.parsePath());
}

/** Parses a dentry prefix such as `/svc/*` or `/`. */
export function readPrefix(text: string): Prefix {
  return readAll(text, (r) => r.parsePrefix());
}

/** Parses a name tree such as `/a | (0.5 * /b & 0.5 * /c)`. */
export function readNameTree(text: string): NameTree<Path> {
  return readAll(text, (r) => r.parseTree());
}

/** Parses one dentry such as `/svc => /#/io.prx.fs`. */
export function readDentry(text: string): Dentry {
  return readAll(text, (r) => r.parseDentry());
}

export interface ReadDtabOptions {
  /**
   * Syntax errors in a multi-line dtab name the line and column and quote only that line
   * (for dtabs from files and request bodies); otherwise the message is Finagle's.
   */
  located?: boolean;
}

/** Refuses a dtab of more than {@link MAX_DTAB_DENTRIES} dentries, whatever form it came in. */
export function checkDentryCount(count: number): void {
  if (count > MAX_DTAB_DENTRIES) throw new DtabTooLargeError(`dtab too large: more than ${MAX_DTAB_DENTRIES} dentries`);
}

/**
 * Parses a dtab such as `/svc=>/#/io.prx.fs;/svc/x=>/$/inet/127.1/80`. Refuses a dtab over the
 * size limits (`limits.ts`) with a {@link DtabTooLargeError}.
 */
export function readDtab(text: string, opts: ReadDtabOptions = {}): Dtab {
  if (text.length > MAX_DTAB_CHARS) throw new DtabTooLargeError(`dtab too large: ${text.length} characters, more than ${MAX_DTAB_CHARS}`);
  return readAll(text, (r) => r.parseDtab(), opts.located === true);
}
