/**
 * The dtab playground (`/delegator`): pick a router, edit its dtab and a path, and see how the
 * path delegates, step by step (`/delegator.json`). The whole state is in the query string
 * (`?router=&path=&dtab=`), so a URL reproduces what someone saw.
 */
import { AdminRequestError, el, main, pageData, postJson, queryParam, replaceQuery, statusLine } from './common.js';
import { renderDelegation, splitDtab, type DelegateJson } from './delegation-view.js';

interface Router {
  readonly label: string;
  readonly protocol: string;
  readonly dtab: string;
  readonly dstPrefix: string;
}

const routers = pageData<{ routers: Router[] } | null>()?.routers ?? [];
const status = statusLine();
const routerSelect = el('select', { id: 'router', 'aria-label': 'Router' }, ...routers.map((r) => el('option', { value: r.label }, `${r.label} (${r.protocol})`)));
const dtabInput = el('textarea', { id: 'dtab', spellcheck: 'false', 'aria-label': 'Dtab', rows: 8 });
const pathInput = el('input', { id: 'path', type: 'text', size: 50, spellcheck: 'false', 'aria-label': 'Path', placeholder: '/svc/name' });
const result = el('div', { id: 'result' });
const resetButton = el('button', { type: 'button', class: 'secondary' }, "Reset to the router's dtab");

function router(): Router | undefined {
  return routers.find((r) => r.label === routerSelect.value);
}

/** Dtab lines one per dentry, for editing. */
const pretty = (dtab: string): string => dtab.split(';').map((d) => d.trim()).filter((d) => d !== '').join(';\n') + (dtab.trim() === '' ? '' : ';');

async function run(): Promise<void> {
  const r = router();
  if (!r) return;
  const path = pathInput.value.trim();
  const dtab = dtabInput.value;
  replaceQuery({ router: r.label, path, dtab });
  if (path === '') {
    status.set('Enter a path to delegate, e.g. ' + `${r.dstPrefix}/name`, 'info');
    result.replaceChildren();
    return;
  }
  status.set('delegating…', 'info');
  try {
    const tree = await postJson<DelegateJson>('/delegator.json', { namespace: r.label, dtab, path });
    result.replaceChildren(renderDelegation(tree, splitDtab(dtab)));
    status.set(`${path} through ${r.label}'s dtab as edited`, 'ok');
  } catch (e) {
    result.replaceChildren();
    status.set(e instanceof AdminRequestError ? `${e.status}: ${e.message}` : String(e), 'error');
  }
}

function build(): void {
  const m = main();
  if (routers.length === 0) {
    m.append(el('p', {}, 'No routers are configured.'));
    return;
  }
  const initialRouter = queryParam('router');
  if (initialRouter && routers.some((r) => r.label === initialRouter)) routerSelect.value = initialRouter;
  const r = router();
  dtabInput.value = queryParam('dtab') ?? pretty(r?.dtab ?? '');
  pathInput.value = queryParam('path') ?? `${r?.dstPrefix ?? '/svc'}/`;
  const form = el('form', { class: 'panel', id: 'playground' },
    el('label', { class: 'field', for: 'router' }, 'Router'), routerSelect,
    el('label', { class: 'field', for: 'dtab' }, 'Dtab (edits apply to this request only)'), dtabInput,
    el('label', { class: 'field', for: 'path' }, 'Path'),
    el('div', { class: 'controls' }, pathInput, el('button', { type: 'submit', id: 'go' }, 'Delegate'), resetButton),
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void run();
  });
  routerSelect.addEventListener('change', () => {
    dtabInput.value = pretty(router()?.dtab ?? '');
    void run();
  });
  resetButton.addEventListener('click', () => {
    dtabInput.value = pretty(router()?.dtab ?? '');
    void run();
  });
  m.append(form, el('section', { class: 'panel' }, el('h2', {}, 'Delegation'), status.node, result));
  if (queryParam('path') !== null) void run();
}

build();
