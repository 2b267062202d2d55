/**
 * The admin UI: the proxy's dashboard, dtab playground, logging and help pages, and the
 * resolver's namespace and dtab pages. Served by the admin server it is registered on; every page
 * and the data it polls are in the `ui` security category, writes (log levels, dtab saves) in
 * `control`. Nothing here touches the data path: the dashboard reads the metrics registry.
 */
import type { MetricsRegistry } from '../../service/stats/index.js';
import type { Admin } from '../admin.js';
import { UiAssets, filesEndpoint } from './assets.js';
import { dtabEditorEndpoints, type StoredDtabs } from './dtab-editor.js';
import { pageEndpoints, type UiPage } from './pages.js';
import type { RegistrySource } from '../endpoints/metrics.js';
import { summaryEndpoint, type DashboardRouter, type ProcessFigures } from './summary.js';

export { UiAssets, UiNotBuiltError, findUiDir, UI_CSP } from './assets.js';
export { checkDtab, type DtabCheck, type SaveOutcome, type StoredDtabView, type StoredDtabs } from './dtab-editor.js';
export { buildSummary, CLIENT_FIELDS, LayoutTracker, ROUTER_FIELDS, type DashboardRouter, type ProcessFigures, type SummaryBody } from './summary.js';

const LOGGING: UiPage = { path: '/logging', bundle: 'logging', title: 'Logging', nav: 'Logging', description: 'Log levels (UI): view and change them.' };
const HELP: UiPage = { path: '/help', bundle: 'help', title: 'Help', nav: 'Help', description: 'What the admin pages show, and every JSON endpoint (UI).' };

/** A router as the proxy's pages start from it. */
export interface UiRouter extends DashboardRouter {
  /** The router's configured dtab (the playground's starting dtab). */
  readonly dtab: string;
  readonly dstPrefix: string;
}

export interface ProxyUiOptions {
  readonly registry: RegistrySource;
  /** The dashboard's process figures when the proxy is more than this process. */
  readonly processFigures?: (registry: MetricsRegistry) => ProcessFigures;
  readonly routers: () => readonly UiRouter[];
  readonly version: string;
  readonly assets?: UiAssets;
}

/** Registers the proxy's pages: `/` (dashboard), `/delegator`, `/logging`, `/help`, and `/admin/summary.json`. */
export function registerProxyUi(admin: Admin, options: ProxyUiOptions): void {
  const assets = options.assets ?? new UiAssets();
  const routers = (): unknown => ({ routers: options.routers() });
  const pages: UiPage[] = [
    { path: '/', bundle: 'dashboard', title: 'Dashboard', nav: 'Dashboard', description: 'Live dashboard of routers and clients (UI).', data: routers },
    { path: '/delegator', bundle: 'delegator', title: 'Dtab playground', nav: 'Dtab playground', description: 'Dtab playground: how a path delegates, step by step (UI).', data: routers },
    LOGGING,
    HELP,
  ];
  for (const endpoint of [...pageEndpoints(assets, { product: 'prx', pages }), filesEndpoint(assets)]) admin.add(endpoint);
  admin.add(
    summaryEndpoint({
      registry: options.registry,
      routers: options.routers,
      version: options.version,
      eventLoopUtilization: () => admin.eventLoop.utilization().recent,
      ...(options.processFigures ? { processFigures: options.processFigures } : {}),
    }),
  );
}

export interface ResolverUiOptions {
  readonly store: StoredDtabs;
  readonly assets?: UiAssets;
}

/** Registers the resolver's pages: `/` (namespaces, dtab editor, delegator), `/logging`, `/help`, and the dtab JSON endpoints. */
export function registerResolverUi(admin: Admin, options: ResolverUiOptions): void {
  const assets = options.assets ?? new UiAssets();
  const pages: UiPage[] = [
    { path: '/', bundle: 'resolver', title: 'Namespaces', nav: 'Namespaces', description: 'Namespaces and their dtabs: view, edit, delegate (UI).' },
    LOGGING,
    HELP,
  ];
  for (const endpoint of [...pageEndpoints(assets, { product: 'prx-resolver', pages }), filesEndpoint(assets), ...dtabEditorEndpoints(options.store)]) {
    admin.add(endpoint);
  }
}
