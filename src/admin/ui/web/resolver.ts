/**
 * The resolver's page (`/`): its namespaces; for the chosen one (`?ns=`), the stored dtab in an
 * editor checked as you type (the server's parser marks the error's position), saved with
 * compare-and-set on the version it was loaded at, and a delegator through the stored dtab.
 *
 * A save refused because someone else changed the dtab shows their version beside yours; your
 * text stays in the editor until you choose to load theirs or to save yours over it.
 */
import { AdminRequestError, append, el, fetchJson, main, postJson, queryParam, replaceQuery, statusLine } from './common.js';
import { renderDelegation, splitDtab, type DelegateJson } from './delegation-view.js';

interface Stored {
  readonly namespace: string;
  readonly dtab: string;
  readonly version: string;
}

type Check =
  | { readonly ok: true; readonly dentries: number }
  | { readonly ok: false; readonly error: string; readonly offset: number | null; readonly line: number | null; readonly column: number | null };

const nsList = el('ul', { class: 'ns', id: 'namespaces' });
const editorPanel = el('section', { class: 'panel', id: 'editor' });
const delegatePanel = el('section', { class: 'panel', id: 'delegate' });
const listStatus = statusLine();
let namespaces: Stored[] = [];
/** The namespace being edited and the version its editor text started from. */
let current: Stored | undefined;

const pretty = (dtab: string): string => dtab.split(';').map((d) => d.trim()).filter((d) => d !== '').join(';\n') + (dtab.trim() === '' ? '' : ';');

async function loadList(): Promise<void> {
  const body = await fetchJson<{ namespaces: Stored[]; health: { ok: boolean; detail?: string } }>('/dtab/namespaces.json');
  namespaces = body.namespaces;
  const selected = queryParam('ns');
  nsList.replaceChildren(
    ...namespaces.map((n) => el('li', {}, el('a', { href: `/?ns=${encodeURIComponent(n.namespace)}`, 'aria-current': n.namespace === selected ? 'true' : 'false', 'data-ns': n.namespace }, n.namespace))),
  );
  listStatus.set(body.health.ok ? `${namespaces.length} namespace(s); storage healthy` : `storage unhealthy: ${body.health.detail ?? ''}`, body.health.ok ? 'info' : 'error');
}

/** Shows the parse error under the editor with the offending character marked. */
function markError(text: string, check: Check, into: HTMLElement): void {
  if (check.ok) {
    into.replaceChildren();
    into.hidden = true;
    return;
  }
  into.hidden = false;
  if (check.offset === null) {
    into.replaceChildren(check.error);
    return;
  }
  const lineStart = text.lastIndexOf('\n', check.offset - 1) + 1;
  const lineEndRaw = text.indexOf('\n', check.offset);
  const lineEnd = lineEndRaw < 0 ? text.length : lineEndRaw;
  const at = text.slice(check.offset, check.offset + 1);
  into.replaceChildren(
    el('div', {}, `line ${check.line ?? '?'}, column ${check.column ?? '?'}: ${check.error}`),
    el('div', {}, text.slice(lineStart, check.offset), el('mark', { 'data-testid': 'error-at' }, at === '' || at === '\n' ? '⏎' : at), text.slice(check.offset + 1, lineEnd)),
  );
}

function showEditor(stored: Stored | undefined, isNew: boolean): void {
  current = stored;
  const nameInput = el('input', { type: 'text', id: 'new-ns', placeholder: 'namespace name', 'aria-label': 'New namespace name' });
  const textarea = el('textarea', { id: 'dtab', spellcheck: 'false', rows: 12, 'aria-label': 'Dtab' });
  const errorBox = el('div', { class: 'error-mark', id: 'dtab-error', hidden: true });
  const checkLine = el('span', { class: 'muted', id: 'check' });
  const saveButton = el('button', { type: 'button', id: 'save' }, isNew ? 'Create' : 'Save');
  const saveStatus = statusLine();
  const conflictBox = el('div', { id: 'conflict', hidden: true });
  const versionLine = el('span', { class: 'muted', id: 'version' }, stored ? `version ${stored.version}` : '');
  textarea.value = stored ? pretty(stored.dtab) : '';
  let timer: ReturnType<typeof setTimeout> | undefined;
  let seq = 0;
  const check = async (): Promise<void> => {
    const mine = ++seq;
    const text = textarea.value;
    try {
      const result = await postJson<Check>('/dtab/check.json', { dtab: text });
      if (mine !== seq) return; // a newer check is under way
      markError(text, result, errorBox);
      checkLine.textContent = result.ok ? `✓ valid, ${result.dentries} dentr${result.dentries === 1 ? 'y' : 'ies'}` : '✗ invalid';
      checkLine.className = result.ok ? 'good' : 'bad';
      saveButton.disabled = !result.ok;
    } catch (e) {
      checkLine.textContent = `cannot check: ${e instanceof Error ? e.message : String(e)}`;
    }
  };
  textarea.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(() => void check(), 200);
  });
  saveButton.addEventListener('click', () => void save());
  const save = async (overVersion?: string): Promise<void> => {
    const namespace = isNew ? nameInput.value.trim() : (current?.namespace ?? '');
    if (namespace === '') {
      saveStatus.set('Name the namespace first.', 'error');
      return;
    }
    const version = overVersion ?? (isNew ? undefined : current?.version);
    try {
      const res = await postJson<{ current: Stored | null }>('/dtab/save.json', { namespace, dtab: textarea.value, ...(version === undefined ? {} : { version }) });
      conflictBox.hidden = true;
      saveStatus.set(`Saved ${namespace}.`, 'ok');
      if (res.current) {
        current = res.current;
        versionLine.textContent = `version ${res.current.version}`;
      }
      await loadList();
      if (isNew) location.assign(`/?ns=${encodeURIComponent(namespace)}`);
    } catch (e) {
      if (e instanceof AdminRequestError && e.status === 409) {
        const theirs = (e.body as { current?: Stored | null } | null)?.current ?? undefined;
        saveStatus.set(`Not saved: ${e.message}`, 'error');
        showConflict(theirs, conflictBox, textarea, versionLine, (v) => void save(v));
        return;
      }
      saveStatus.set(e instanceof AdminRequestError ? `Not saved (${e.status}): ${e.message}` : String(e), 'error');
    }
  };
  editorPanel.replaceChildren();
  append(editorPanel, [
    el('h2', {}, isNew ? 'New namespace' : `Namespace ${stored?.namespace ?? ''}`, ' ', versionLine),
    isNew ? el('div', {}, el('label', { class: 'field', for: 'new-ns' }, 'Name'), nameInput) : null,
    el('label', { class: 'field', for: 'dtab' }, 'Dtab'),
    textarea, errorBox,
    el('div', { class: 'controls' }, saveButton, checkLine),
    saveStatus.node, conflictBox,
  ]);
  void check();
}

function showConflict(theirs: Stored | undefined, box: HTMLElement, textarea: HTMLTextAreaElement, versionLine: HTMLElement, saveOver: (version: string) => void): void {
  box.hidden = false;
  box.className = 'conflict';
  if (!theirs) {
    box.replaceChildren(el('p', {}, 'The namespace exists now; reload to see it.'));
    return;
  }
  box.replaceChildren(
    el('p', {}, el('b', {}, 'Someone else saved this namespace since you loaded it.'), ' Their version (', theirs.version, ') is below; your text is still in the editor.'),
    el('pre', { 'data-testid': 'their-dtab' }, pretty(theirs.dtab)),
    el('div', { class: 'controls' },
      el('button', { type: 'button', class: 'secondary', onclick: () => {
        textarea.value = pretty(theirs.dtab);
        current = theirs;
        versionLine.textContent = `version ${theirs.version}`;
        box.hidden = true;
        textarea.dispatchEvent(new Event('input'));
      } }, 'Discard mine, load theirs'),
      el('button', { type: 'button', onclick: () => {
        current = theirs;
        versionLine.textContent = `version ${theirs.version}`;
        saveOver(theirs.version);
      } }, 'Save mine over theirs'),
    ),
  );
}

function showDelegator(ns: string): void {
  const pathInput = el('input', { type: 'text', id: 'path', size: 40, 'aria-label': 'Path', value: queryParam('path') ?? '/svc/' });
  const extra = el('input', { type: 'text', id: 'extra-dtab', size: 40, 'aria-label': 'Extra dentries', placeholder: 'extra dentries for this request (optional)', value: queryParam('dtab') ?? '' });
  const out = el('div', { id: 'result' });
  const st = statusLine();
  const form = el('form', { class: 'controls' }, pathInput, extra, el('button', { type: 'submit', id: 'go' }, 'Delegate'));
  const run = async (): Promise<void> => {
    const path = pathInput.value.trim();
    replaceQuery({ ns, path, dtab: extra.value });
    try {
      const tree = await postJson<DelegateJson>('/dtab/delegator.json', { namespace: ns, path, dtab: extra.value });
      const stored = namespaces.find((n) => n.namespace === ns)?.dtab ?? '';
      out.replaceChildren(renderDelegation(tree, splitDtab(`${stored};${extra.value}`)));
      st.set(`${path} through ${ns}'s stored dtab${extra.value.trim() === '' ? '' : ' plus your dentries'}`, 'ok');
    } catch (e) {
      out.replaceChildren();
      st.set(e instanceof AdminRequestError ? `${e.status}: ${e.message}` : String(e), 'error');
    }
  };
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void run();
  });
  delegatePanel.replaceChildren(el('h2', {}, `Delegate through ${ns}`), form, st.node, out);
  if (queryParam('path') !== null) void run();
}

async function start(): Promise<void> {
  main().append(
    el('div', { class: 'layout-side' },
      el('section', { class: 'panel' }, el('h2', {}, 'Namespaces'), listStatus.node, nsList,
        el('p', {}, el('a', { href: '/?new=1', id: 'new' }, '+ New namespace'))),
      el('div', {}, editorPanel, delegatePanel)),
  );
  try {
    await loadList();
  } catch (e) {
    listStatus.set(`cannot read /dtab/namespaces.json: ${e instanceof Error ? e.message : String(e)}`, 'error');
    return;
  }
  const ns = queryParam('ns');
  if (queryParam('new') !== null) {
    showEditor(undefined, true);
    delegatePanel.hidden = true;
    return;
  }
  const stored = namespaces.find((n) => n.namespace === ns) ?? (ns === null ? namespaces[0] : undefined);
  if (!stored) {
    editorPanel.replaceChildren(ns === null ? el('p', {}, 'No namespaces yet: create one.') : el('p', { class: 'bad' }, `No namespace ${ns}.`));
    delegatePanel.hidden = true;
    return;
  }
  showEditor(stored, false);
  showDelegator(stored.namespace);
}

void start();
