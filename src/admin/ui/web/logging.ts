/** `/logging`: the loggers and their levels (`/logging.json`), each changeable in place. */
import { AdminRequestError, el, fetchJson, main, postJson, statusLine } from './common.js';

interface LoggerRow {
  readonly logger: string;
  readonly level: string;
}

const LEVELS = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL', 'OFF'];
const status = statusLine();
const tbody = el('tbody');

function row(r: LoggerRow): HTMLTableRowElement {
  const select = el('select', { 'aria-label': `Level of ${r.logger}`, 'data-logger': r.logger }, ...LEVELS.map((l) => el('option', { value: l, selected: l === r.level }, l)));
  select.addEventListener('change', () => void setLevel(r.logger, select.value));
  return el('tr', {}, el('td', { class: 'id' }, r.logger), el('td', {}, select));
}

async function setLevel(logger: string, level: string): Promise<void> {
  try {
    const updated = await postJson<LoggerRow>('/logging.json', { logger, level });
    status.set(`${updated.logger} is now ${updated.level}`, 'ok');
    await load();
  } catch (e) {
    status.set(e instanceof AdminRequestError ? `${e.status}: ${e.message}` : String(e), 'error');
  }
}

async function load(): Promise<void> {
  const rows = await fetchJson<LoggerRow[]>('/logging.json');
  tbody.replaceChildren(...rows.map(row));
}

const nameInput = el('input', { type: 'text', placeholder: 'logger name, e.g. prx.router', 'aria-label': 'Logger name', size: 30 });
const levelInput = el('select', { 'aria-label': 'Level' }, ...LEVELS.map((l) => el('option', { value: l, selected: l === 'DEBUG' }, l)));
const form = el('form', { class: 'controls' }, nameInput, levelInput, el('button', { type: 'submit' }, 'Set level'));
form.addEventListener('submit', (e) => {
  e.preventDefault();
  if (nameInput.value.trim() !== '') void setLevel(nameInput.value.trim(), levelInput.value);
});
main().append(
  el('section', { class: 'panel' }, el('p', { class: 'muted' }, 'Changes take effect at once and last until the process restarts (needs the control category).'), form, status.node,
    el('table', { id: 'loggers' }, el('thead', {}, el('tr', {}, el('th', {}, 'Logger'), el('th', {}, 'Level'))), tbody)),
);
load().catch((e: unknown) => status.set(`cannot read /logging.json: ${e instanceof Error ? e.message : String(e)}`, 'error'));
