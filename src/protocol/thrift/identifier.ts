/**
 * The thrift identifier (Linkerd's): `dstPrefix [/ dest] [/ service] [/ method]`, where `dest` is
 * the TTwitter RequestHeader's destination path (absent without the upgrade), `service` the part
 * before `:` of a TMultiplexedProtocol method name, and the method is appended only with
 * `thriftMethodInDst`.
 */
import { Path, readPath } from '../../naming/index.js';

export class ThriftIdentifier {
  readonly #prefix: Path;
  readonly #methodInDst: boolean;

  constructor(dstPrefix: Path, methodInDst: boolean) {
    this.#prefix = dstPrefix;
    this.#methodInDst = methodInDst;
  }

  /** The logical name of a call; throws NamingParseError on a `dest` that is not a path. */
  identify(methodName: string, dest: string | undefined): Path {
    let dst = this.#prefix;
    if (dest !== undefined && dest !== '' && dest !== '/') dst = dst.concat(readPath(dest));
    const colon = methodName.indexOf(':');
    const service = colon >= 0 ? methodName.slice(0, colon) : '';
    const method = colon >= 0 ? methodName.slice(colon + 1) : methodName;
    if (service !== '') dst = dst.concat(Path.utf8(service));
    if (this.#methodInDst && method !== '') dst = dst.concat(Path.utf8(method));
    return dst;
  }
}
