import type { HeaderMap } from './types.js';

// Small accessors over HeaderMap shared by this module. They allocate nothing for the common
// single-value case.

/** The first value of `name` (Finagle's `headerMap.get`), or undefined. */
export function firstHeaderValue(headers: HeaderMap, name: string): string | undefined {
  const v = headers[name];
  return typeof v === 'string' || v === undefined ? v : v[0];
}

const NO_VALUES: readonly string[] = Object.freeze([]);

/** Every value of `name`, in order (Finagle's `headerMap.getAll`). */
export function allHeaderValues(headers: HeaderMap, name: string): readonly string[] {
  const v = headers[name];
  if (v === undefined) return NO_VALUES;
  return typeof v === 'string' ? [v] : v;
}

/** All values of `name` joined with `, ` (how Node folds a repeated list header). */
export function joinedHeaderValue(headers: HeaderMap, name: string): string | undefined {
  const v = headers[name];
  return typeof v === 'string' || v === undefined ? v : v.join(', ');
}

/** Appends one more value of `name` (Finagle's `headerMap.add`), keeping existing ones. */
export function addHeaderValue(headers: HeaderMap, name: string, value: string): void {
  const v = headers[name];
  if (v === undefined) headers[name] = value;
  else if (typeof v === 'string') headers[name] = [v, value];
  else v.push(value);
}

/** Removes `name`; a no-op (and no shape change) when it is absent. */
export function removeHeader(headers: HeaderMap, name: string): void {
  if (headers[name] !== undefined) delete headers[name];
}
