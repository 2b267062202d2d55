/**
 * The header map the router hands to every function in this module: Node's `IncomingHttpHeaders`
 * shape, names lower-cased, a repeated header as an array of its values. Functions here read and
 * rewrite it in place.
 */
export type HeaderValue = string | string[];
export type HeaderMap = Record<string, HeaderValue | undefined>;
