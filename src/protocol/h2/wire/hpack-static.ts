/**
 * RFC 7541 Appendix A: HPACK's static table, a fact of the protocol. Index i (1-61) is
 * STATIC_NAMES[i] / STATIC_VALUES[i]; slot 0 is unused so indexes need no offset.
 */
/** The number of static entries: dynamic indexes start after it. */
export const STATIC_COUNT = 61;

export const STATIC_NAMES: readonly string[] = [
  '',
  ':authority', ':method', ':method', ':path', ':path', ':scheme', ':scheme', ':status', ':status', ':status',
  ':status', ':status', ':status', ':status', 'accept-charset', 'accept-encoding', 'accept-language',
  'accept-ranges', 'accept', 'access-control-allow-origin', 'age', 'allow', 'authorization', 'cache-control',
  'content-disposition', 'content-encoding', 'content-language', 'content-length', 'content-location',
  'content-range', 'content-type', 'cookie', 'date', 'etag', 'expect', 'expires', 'from', 'host', 'if-match',
  'if-modified-since', 'if-none-match', 'if-range', 'if-unmodified-since', 'last-modified', 'link', 'location',
  'max-forwards', 'proxy-authenticate', 'proxy-authorization', 'range', 'referer', 'refresh', 'retry-after',
  'server', 'set-cookie', 'strict-transport-security', 'transfer-encoding', 'user-agent', 'vary', 'via',
  'www-authenticate',
];

export const STATIC_VALUES: readonly string[] = withEmptyValues([
  '',
  '', 'GET', 'POST', '/', '/index.html', 'http', 'https', '200', '204', '206', '304', '400', '404', '500', '',
  'gzip, deflate',
]);

/** The values listed up to the last non-empty one, then '' up to index 61. */
function withEmptyValues(listed: string[]): string[] {
  while (listed.length <= STATIC_COUNT) listed.push('');
  return listed;
}
