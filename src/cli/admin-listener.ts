import type { AdminServerOptions } from '../admin/index.js';
import type { ProxyConfig } from '../config/index.js';

/** Where and how the proxy's admin interface listens (`admin.ip`, `port`, `tls`, `security`): one process's, or a primary's. */
export function adminListener(admin: ProxyConfig['admin']): Pick<AdminServerOptions, 'ip' | 'port' | 'tls' | 'security'> {
  const tls = admin.tls && {
    certPath: admin.tls.certPath,
    keyPath: admin.tls.keyPath,
    ...(admin.tls.caCertPath === undefined ? {} : { caCertPath: admin.tls.caCertPath }),
  };
  return { ip: admin.ip, port: admin.port, ...(tls ? { tls } : {}), security: admin.security };
}
