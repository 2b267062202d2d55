/**
 * `x-forwarded-client-cert` (client option `forwardClientCert`): tells the service which client
 * certificate the proxy's TLS server received,
 *
 *     Hash=<SHA-256 of the DER, upper-case hex>;SAN=<uri>;DNS=<name>;Subject="<RFC 2253 DN>"
 *
 * with one `SAN=` per URI and one `DNS=` per DNS subject alternative name, in certificate order,
 * and the subject as Java's `X500Principal.getName()` prints it. When the option is off the header
 * is removed, so a client cannot forge it.
 */
import { childrenOf, DerError, elementHex, oidString, readNode, stringValue, Tag, type DerNode } from './der.js';
import { PRX_DST_CLIENT, PRX_DST_RESIDUAL, X_FORWARDED_CLIENT_CERT } from './names.js';
import type { HeaderMap } from './types.js';

/** A peer certificate as Node's TLS socket reports it; only the DER bytes are used. */
export interface PeerCertificateLike {
  readonly raw?: Uint8Array | undefined;
}

// Attribute keywords Java's RFC 2253 output uses; any other attribute prints as its OID.
const RFC2253_KEYWORDS: Readonly<Record<string, string>> = {
  '2.5.4.3': 'CN',
  '2.5.4.6': 'C',
  '2.5.4.7': 'L',
  '2.5.4.8': 'ST',
  '2.5.4.10': 'O',
  '2.5.4.11': 'OU',
  '2.5.4.9': 'STREET',
  '0.9.2342.19200300.100.1.25': 'DC',
  '0.9.2342.19200300.100.1.1': 'UID',
};

// Characters Java escapes with a backslash in RFC 2253 values (it escapes `=` and `#` too).
const RFC2253_ESCAPED = ',=+<>#;"\\';

/** One attribute value in Java's RFC 2253 form. */
function rfc2253Value(text: string): string {
  let escaped = '';
  for (const c of text) {
    if (RFC2253_ESCAPED.includes(c)) escaped += '\\' + c;
    else if (c === '\0') escaped += '\\00';
    else escaped += c;
  }
  // Leading and trailing spaces (and CRs) are escaped one by one.
  let lead = 0;
  while (lead < escaped.length && (escaped[lead] === ' ' || escaped[lead] === '\r')) lead++;
  let trail = escaped.length - 1;
  while (trail >= 0 && (escaped[trail] === ' ' || escaped[trail] === '\r')) trail--;
  if (lead === 0 && trail === escaped.length - 1) return escaped;
  let out = '';
  for (let i = 0; i < escaped.length; i++) out += (i < lead || i > trail ? '\\' : '') + escaped[i];
  return out;
}

/** One `type=value` of a relative distinguished name. */
function attributeText(der: Uint8Array, ava: DerNode): string {
  const [typeNode, valueNode] = childrenOf(der, ava);
  if (typeNode === undefined || valueNode === undefined) throw new DerError('attribute without a value');
  const oid = oidString(der, typeNode);
  const keyword = RFC2253_KEYWORDS[oid];
  const text = keyword === undefined ? undefined : stringValue(der, valueNode);
  // An attribute without a keyword, or with a non-string value, shows its DER in hex.
  if (keyword === undefined || text === undefined) return `${keyword ?? oid}=#${elementHex(der, valueNode)}`;
  return `${keyword}=${rfc2253Value(text)}`;
}

/** A Name in RFC 2253 form: RDNs last to first, joined by `,`; multi-valued RDNs joined by `+`. */
function rfc2253Name(der: Uint8Array, name: DerNode): string {
  const rdns = childrenOf(der, name);
  const parts: string[] = [];
  for (let i = rdns.length - 1; i >= 0; i--) {
    parts.push(childrenOf(der, rdns[i] as DerNode).map((ava) => attributeText(der, ava)).join('+'));
  }
  return parts.join(',');
}

const SAN_OID = '2.5.29.17';
const SAN_DNS = 0x82; // [2] IMPLICIT IA5String
const SAN_URI = 0x86; // [6] IMPLICIT IA5String

/** The parts of a certificate the header shows. */
export interface CertificateIdentity {
  readonly subject: string;
  /** URI and DNS subject alternative names, in certificate order. */
  readonly altNames: readonly { readonly type: 'URI' | 'DNS'; readonly value: string }[];
}

/** Reads the subject and the URI/DNS alternative names of a DER certificate. */
export function certificateIdentity(der: Uint8Array): CertificateIdentity {
  const cert = readNode(der, 0);
  const [tbs] = childrenOf(der, cert);
  if (tbs === undefined || tbs.tag !== Tag.Sequence) throw new DerError('certificate without tbsCertificate');
  const fields = childrenOf(der, tbs);
  // version [0] is optional; then serial, signature, issuer, validity, subject.
  const base = fields[0]?.tag === 0xa0 ? 1 : 0;
  const subjectNode = fields[base + 4];
  if (subjectNode === undefined) throw new DerError('certificate without subject');
  const altNames: { type: 'URI' | 'DNS'; value: string }[] = [];
  const extensions = fields.find((f) => f.tag === 0xa3);
  if (extensions !== undefined) {
    const [list] = childrenOf(der, extensions);
    for (const ext of list === undefined ? [] : childrenOf(der, list)) {
      const parts = childrenOf(der, ext);
      if (parts[0] === undefined || oidString(der, parts[0]) !== SAN_OID) continue;
      const octets = parts[parts.length - 1] as DerNode; // extnValue follows the optional critical flag
      const names = readNode(der, octets.contentStart, octets.end);
      for (const gn of childrenOf(der, names)) {
        if (gn.tag !== SAN_DNS && gn.tag !== SAN_URI) continue; // IP, email… are not forwarded
        const value = Buffer.from(der.buffer, der.byteOffset + gn.contentStart, gn.end - gn.contentStart).toString('latin1');
        altNames.push({ type: gn.tag === SAN_URI ? 'URI' : 'DNS', value });
      }
    }
  }
  return { subject: rfc2253Name(der, subjectNode), altNames };
}

// A connection presents the same certificate for every request: remember the header per
// certificate object (the router keeps the object for the connection's lifetime).
const headerByCert = new WeakMap<object, string>();

/** The `x-forwarded-client-cert` value of a DER certificate. */
export function clientCertHeaderValue(der: Uint8Array): string {
  // node:crypto is loaded on first use: most configurations never forward a client certificate.
  const { createHash } = process.getBuiltinModule('node:crypto');
  let v = `Hash=${createHash('sha256').update(der).digest('hex').toUpperCase()}`;
  const id = certificateIdentity(der);
  for (const san of id.altNames) v += san.type === 'URI' ? `;SAN=${san.value}` : `;DNS=${san.value}`;
  if (id.subject !== '') v += `;Subject="${id.subject}"`;
  return v;
}

/**
 * Egress: with `forwardClientCert` on and a peer certificate present, sets the header from it;
 * otherwise removes any incoming `x-forwarded-client-cert`, so only the proxy can assert one.
 * `cert` is what `TLSSocket.getPeerCertificate()` returned (an empty object when none).
 */
export function applyClientCertHeader(headers: HeaderMap, cert: PeerCertificateLike | null | undefined, enabled: boolean): void {
  const der = cert?.raw;
  if (!enabled || cert == null || der === undefined || der.length === 0) {
    if (headers[X_FORWARDED_CLIENT_CERT] !== undefined) delete headers[X_FORWARDED_CLIENT_CERT];
    return;
  }
  let value = headerByCert.get(cert);
  if (value === undefined) {
    value = clientCertHeaderValue(der);
    headerByCert.set(cert, value);
  }
  headers[X_FORWARDED_CLIENT_CERT] = value;
}

const peerValues = new WeakMap<object, string | null>();

/**
 * A TLS connection's client certificate as an `x-forwarded-client-cert` value, computed once per
 * connection (`connection`: the h1 socket, the h2 session); undefined on plain connections or
 * without a certificate.
 */
export function peerCertHeader(connection: object, socket: { getPeerCertificate?: (detailed: false) => { raw?: Buffer } | null } | undefined): string | undefined {
  if (typeof socket?.getPeerCertificate !== 'function') return undefined;
  let v = peerValues.get(connection);
  if (v === undefined) {
    const cert = socket.getPeerCertificate(false);
    v = cert !== null && cert.raw !== undefined ? clientCertHeaderValue(cert.raw) : null;
    peerValues.set(connection, v);
  }
  return v ?? undefined;
}

/**
 * An attempt's destination headers (Linkerd's path and client stacks): `prx-dst-client`, the
 * residual path when there is one, and the inbound client certificate only for clients configured
 * to forward it (anyone else's `x-forwarded-client-cert` is removed: only the proxy asserts one).
 */
export function writeDestinationHeaders(headers: HeaderMap, clientId: string, residual: string | undefined, clientCert: string | undefined, forwardClientCert: boolean): void {
  headers[PRX_DST_CLIENT] = clientId;
  if (residual === undefined) delete headers[PRX_DST_RESIDUAL];
  else headers[PRX_DST_RESIDUAL] = residual;
  if (forwardClientCert && clientCert !== undefined) headers[X_FORWARDED_CLIENT_CERT] = clientCert;
  else delete headers[X_FORWARDED_CLIENT_CERT];
}
