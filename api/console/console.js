// andon console: plain JavaScript, no framework, no build step. Every piece
// of data comes from the JSON API; the live parts read /v1/events with
// fetch (EventSource cannot send the Authorization header). Text from the
// server is only ever set as textContent, never as HTML.
'use strict';

(() => {
  const TOKEN_KEY = 'andon.token';
  const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
  const $ = (id) => document.getElementById(id);
  const views = ['token-view', 'runs-view', 'run-view', 'servers-view'];

  // --- talking to the API -------------------------------------------------

  class AuthNeeded extends Error {}

  function headers(extra) {
    const h = Object.assign({ Accept: 'application/json' }, extra);
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) h.Authorization = 'Bearer ' + token;
    return h;
  }

  async function api(method, path, body) {
    const init = { method, cache: 'no-store', headers: headers(body === undefined ? {} : { 'Content-Type': 'application/json' }) };
    if (body !== undefined) init.body = JSON.stringify(body);
    const resp = await fetch(path, init);
    if (resp.status === 401) {
      needToken();
      throw new AuthNeeded('an API token is needed');
    }
    let data = null;
    try { data = await resp.json(); } catch (e) { data = null; }
    if (!resp.ok) {
      const err = new Error(data && data.error ? data.error.message : 'the server answered ' + resp.status);
      err.status = resp.status;
      err.code = data && data.error ? data.error.code : '';
      throw err;
    }
    return data;
  }

  // stream reads a server-sent event stream and calls onEvent(name, data)
  // for each event, reconnecting (the server starts each connection with
  // the current state) until the returned stop function is called. A 4xx
  // answer other than 401 ends it with onFail(error).
  function stream(path, onEvent, onFail) {
    const ctrl = new AbortController();
    const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
    (async () => {
      let delay = 250;
      while (!ctrl.signal.aborted) {
        try {
          const resp = await fetch(path, { cache: 'no-store', signal: ctrl.signal, headers: headers({ Accept: 'text/event-stream' }) });
          if (resp.status === 401) { needToken(); return; }
          if (resp.status >= 400 && resp.status < 500) {
            let msg = 'the server answered ' + resp.status;
            try { const d = await resp.json(); if (d.error) msg = d.error.message; } catch (e) { /* keep msg */ }
            const err = new Error(msg);
            err.status = resp.status;
            onFail(err);
            return;
          }
          if (!resp.ok || !resp.body) throw new Error('the server answered ' + resp.status);
          setLive('Live');
          delay = 250;
          await readEvents(resp.body, onEvent);
        } catch (e) {
          if (ctrl.signal.aborted) return;
        }
        setLive('Reconnecting…');
        await sleep(delay);
        delay = Math.min(delay * 2, 5000);
      }
    })();
    return () => ctrl.abort();
  }

  // readEvents parses text/event-stream: blocks separated by a blank line,
  // "event:" and "data:" fields, ":" comments (the heartbeat).
  async function readEvents(body, onEvent) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      // Line ends may be \r\n, \r or \n; a \r at a chunk's end waits
      // for the next chunk, which may begin with its \n.
      buf += value;
      const cr = buf.endsWith('\r');
      if (cr) buf = buf.slice(0, -1);
      buf = buf.replace(/\r\n?/g, '\n');
      let end;
      while ((end = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, end);
        buf = buf.slice(end + 2);
        let name = 'message';
        const data = [];
        for (const line of block.split('\n')) {
          if (line === '' || line.startsWith(':')) continue;
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          let v = colon < 0 ? '' : line.slice(colon + 1);
          if (v.startsWith(' ')) v = v.slice(1);
          if (field === 'event') name = v;
          else if (field === 'data') data.push(v);
        }
        if (data.length > 0) onEvent(name, JSON.parse(data.join('\n')));
      }
      if (cr) buf += '\r';
    }
  }

  // --- small helpers --------------------------------------------------------

  function el(tag, props, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else e.setAttribute(k, v);
    }
    for (const c of children) if (c !== null && c !== undefined) e.append(c);
    return e;
  }
  const fmtTime = (t) => (t ? new Date(t).toLocaleString() : '—');
  const fmtMS = (ms) => (ms >= 1000 ? (ms / 1000).toFixed(2) + ' s' : ms.toFixed(ms < 10 ? 2 : 0) + ' ms');
  const pretty = (raw) => { try { return JSON.stringify(raw, null, 2); } catch (e) { return String(raw); } };
  const statusBadge = (s) => el('span', { class: 'status s-' + s, text: s.replaceAll('_', ' ') });
  // fence describes the write fence: the effect of the write in flight
  // (reads are not fenced), which stays stamped on a run that ended during
  // the write.
  const fence = (run) => {
    if (!run.pending_effect) return 'clear: no write in flight';
    const effect = run.pending_effect.replaceAll('_', ' ');
    return TERMINAL.has(run.status) ? effect + ' stamped: the run ended during this write' : effect + ' in flight';
  };
  const announce = (msg) => { $('announce').textContent = msg; };
  const setLive = (msg) => { $('live').textContent = msg; };
  // setText changes an element's text only if it differs: a live region
  // announces every change, and the page re-renders on every event.
  const setText = (id, text) => { if ($(id).textContent !== text) $(id).textContent = text; };
  function show(id) {
    for (const v of views) $(v).hidden = v !== id;
  }

  // --- routing ----------------------------------------------------------------

  let leave = () => {};
  let waitingForToken = false;

  function route() {
    leave();
    leave = () => {};
    if (waitingForToken) return;
    setLive('');
    const hash = location.hash || '#/runs';
    const m = hash.match(/^#\/runs\/([^/]+)$/);
    $('nav-runs').removeAttribute('aria-current');
    $('nav-servers').removeAttribute('aria-current');
    if (m) {
      $('nav-runs').setAttribute('aria-current', 'page');
      leave = runPage(decodeURIComponent(m[1]));
    } else if (hash === '#/servers') {
      $('nav-servers').setAttribute('aria-current', 'page');
      leave = serversPage();
    } else {
      $('nav-runs').setAttribute('aria-current', 'page');
      leave = runsPage();
    }
  }

  function needToken() {
    if (waitingForToken) return;
    waitingForToken = true;
    leave();
    leave = () => {};
    setLive('Not connected');
    show('token-view');
    $('token-input').value = '';
    $('token-input').focus();
    announce('An API token is needed.');
  }

  $('token-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const token = $('token-input').value.trim();
    if (!token) return;
    sessionStorage.setItem(TOKEN_KEY, token);
    $('token-input').value = '';
    waitingForToken = false;
    route();
  });

  // --- the runs page ------------------------------------------------------------

  const runsState = { runs: new Map() };

  function runsPage() {
    show('runs-view');
    runsState.runs.clear();
    renderRuns();
    const stop = stream('/v1/events', (name, run) => {
      if (name !== 'run') return;
      const before = runsState.runs.get(run.id);
      if (before && before.status !== run.status) announce('Run ' + run.id + ' is now ' + run.status.replaceAll('_', ' ') + '.');
      runsState.runs.set(run.id, run);
      renderRuns();
    }, (err) => { $('runs-empty').textContent = 'Could not follow the runs: ' + err.message; });
    return stop;
  }

  function renderRuns() {
    const runs = [...runsState.runs.values()].sort((a, b) => (a.created_at < b.created_at ? 1 : -1));
    const rows = runs.map((r) => el('tr', { 'data-run': r.id },
      el('td', {}, el('a', { href: '#/runs/' + encodeURIComponent(r.id), text: r.id })),
      el('td', {}, statusBadge(r.status)),
      el('td', { text: r.owner }),
      el('td', { text: fmtTime(r.created_at) }),
      el('td', { text: fence(r) })));
    $('runs-table').tBodies[0].replaceChildren(...rows);
    $('runs-table').hidden = runs.length === 0;
    $('runs-empty').hidden = runs.length > 0;
  }

  $('start-file').addEventListener('change', async () => {
    const file = $('start-file').files[0];
    if (file) $('start-script').value = await file.text();
  });

  $('start-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const body = { prompt: $('start-prompt').value };
    const script = $('start-script').value;
    if (script.trim() !== '') body.script = script;
    $('start-status').textContent = 'Starting…';
    try {
      const run = await api('POST', '/v1/runs', body);
      $('start-status').textContent = 'Started ' + run.id + '.';
      location.hash = '#/runs/' + encodeURIComponent(run.id);
    } catch (e) {
      if (!(e instanceof AuthNeeded)) $('start-status').textContent = 'Could not start the run: ' + e.message;
    }
  });

  // --- the run page ---------------------------------------------------------------

  let current = null; // the run page's state while it is shown

  function runPage(id) {
    show('run-view');
    const st = { id, run: null, steps: new Map(), audit: [], tasks: [], cancel: null, timers: [], stopped: false };
    current = st;
    $('run-title').textContent = 'Run ' + id;
    $('run-error').hidden = true;
    delete $('run-status').dataset.status;
    for (const f of ['run-status', 'run-reason', 'run-fence', 'run-tasks', 'run-owner', 'run-prompt', 'run-created', 'run-finished', 'cancel-status', 'approval-status']) $(f).textContent = '';
    $('timeline').replaceChildren();
    $('audit-table').tBodies[0].replaceChildren();
    $('audit-more').hidden = true;
    $('approval').hidden = true;
    $('question').hidden = true;
    $('question-status').textContent = '';
    $('cancel-button').disabled = true;
    $('main').focus();

    const refreshAudit = debounce(() => loadDetail(st), 150);
    const stopStream = stream('/v1/events?run=' + encodeURIComponent(id), (name, data) => {
      if (name === 'run') {
        const before = st.run;
        st.run = data;
        // The status itself is a live region: no announcement here.
        if (before && before.status !== data.status) {
          if (TERMINAL.has(data.status)) {
            // Audit rows are written as calls close, just after the end.
            st.timers.push(setTimeout(() => loadDetail(st), 1000), setTimeout(() => loadDetail(st), 3000));
          }
        }
        refreshAudit();
      } else if (name === 'step') {
        st.steps.set(data.seq, data);
      }
      renderRun(st);
    }, (err) => {
      $('run-error').textContent = err.status === 404 ? 'There is no run ' + id + '.' : 'Could not follow the run: ' + err.message;
      $('run-error').hidden = false;
    });
    // A task's status changes on its server, not in a step: while the run
    // or one of its tasks is not over, the page reads the detail again.
    const tick = setInterval(() => {
      renderProgress(st);
      if (st.run && (!TERMINAL.has(st.run.status) || st.tasks.some((t) => !TASK_OVER.has(t.status)))) loadDetail(st);
    }, 1000);
    return () => {
      st.stopped = true;
      stopStream();
      clearInterval(tick);
      st.timers.forEach(clearTimeout);
      refreshAudit.cancel();
      if (current === st) current = null;
    };
  }

  function debounce(fn, ms) {
    let t = null;
    const d = () => { clearTimeout(t); t = setTimeout(fn, ms); };
    d.cancel = () => clearTimeout(t);
    return d;
  }

  async function loadDetail(st) {
    try {
      const d = await api('GET', '/v1/runs/' + encodeURIComponent(st.id));
      if (st.stopped) return;
      // The newest page of the rows: said so when older ones are left out.
      st.audit = d.audit || [];
      st.auditOlder = Boolean(d.audit_next_before);
      st.tasks = d.tasks || [];
      renderAudit(st);
      renderTasks(st);
    } catch (e) { /* the stream reports what matters */ }
  }

  // pendingCall is the call the run is on: the first call of its last
  // model turn that has no tool step yet.
  function pendingCall(st) {
    const steps = [...st.steps.values()].sort((a, b) => a.seq - b.seq);
    let last = -1;
    steps.forEach((s, i) => { if (s.kind === 'model') last = i; });
    if (last < 0 || !Array.isArray(steps[last].args)) return null;
    const done = steps.slice(last + 1).filter((s) => s.kind === 'tool').length;
    const call = steps[last].args[done];
    return call ? { call, since: steps[steps.length - 1].at } : null;
  }

  function renderRun(st) {
    const r = st.run;
    if (!r) return;
    if ($('run-status').dataset.status !== r.status) {
      $('run-status').dataset.status = r.status;
      $('run-status').replaceChildren(statusBadge(r.status));
    }
    $('run-reason').textContent = r.reason && r.reason !== r.status ? '(' + r.reason.replaceAll('_', ' ') + ')' : '';
    setText('run-fence', fence(r));
    $('run-owner').textContent = r.owner;
    let prompt = '';
    try { prompt = r.request ? r.request.prompt : ''; } catch (e) { prompt = ''; }
    $('run-prompt').textContent = prompt || '—';
    $('run-created').textContent = fmtTime(r.created_at);
    $('run-finished').textContent = r.finished_at ? fmtTime(r.finished_at) : 'not yet';
    const terminal = TERMINAL.has(r.status);
    $('cancel-button').disabled = terminal || (st.cancel && !st.cancel.done);
    if (st.cancel && !st.cancel.done && st.cancel.tookMS !== undefined && r.status === 'cancelled') {
      st.cancel.done = true;
      $('cancel-status').textContent = 'Cancelled. The server took ' + fmtMS(st.cancel.tookMS) + ' to stop the run; the page saw it cancelled ' +
        fmtMS(performance.now() - st.cancel.start) + ' after the click.' + (st.cancel.tasks || '');
    }
    const waiting = r.status === 'waiting_for_approval';
    const pending = pendingCall(st);
    $('approval').hidden = !waiting;
    if (waiting) {
      // The server names the call the run waits on; an approval sends
      // that name back, so it covers exactly the call shown here.
      const p = r.pending;
      $('approval-tool').textContent = p ? p.tool : pending ? pending.call.name : 'a tool';
      $('approval-args').textContent = p ? pretty(p.args || {}) : pending ? pretty(pending.call.arguments || {}) : '';
      $('approval-ref').textContent = p ? 'Step ' + p.step + ', call ' + p.call + (p.call_id ? ' (model id ' + p.call_id + ')' : '') + ' · arguments ' + p.args_digest : '';
      $('approval-four-eyes').hidden = !(p && p.four_eyes);
    }
    renderQuestion(st);
    renderTimeline(st, pending);
  }

  const TASK_OVER = new Set(['completed', 'failed', 'cancelled', 'unknown']);
  const TASK_STATES = {
    working: 'working', input_required: 'input required', cancelling: 'cancelling', cancelled: 'cancelled',
    completed: 'completed', failed: 'failed', unknown: 'unknown: the server cannot say',
  };
  const CANCEL_OUTCOMES = {
    acknowledged: 'the server acknowledged tasks/cancel', rejected: 'the server refused tasks/cancel',
    unreachable: 'tasks/cancel could not reach the server',
  };

  // renderTasks shows the calls that became MCP tasks, live: each task's
  // state on its server, and what its server said to tasks/cancel.
  function renderTasks(st) {
    if (!st.tasks.length) { setText('run-tasks', 'none'); return; }
    setText('run-tasks', st.tasks.map((t) => t.tool + ' (step ' + t.step + ', call ' + t.call + '): task ' + t.task_id + ' on ' + t.server +
      ' — ' + (TASK_STATES[t.state] || t.state) + (t.status_message ? ' (' + t.status_message + ')' : '') +
      (t.cancel_outcome ? '; ' + CANCEL_OUTCOMES[t.cancel_outcome] : '')).join('; '));
    renderTimeline(st, pendingCall(st));
  }

  // taskOf returns the task of the call in progress, if it became one.
  function taskOf(st, pending) {
    const steps = [...st.steps.values()].filter((s) => s.kind === 'model').sort((a, b) => a.seq - b.seq);
    if (!pending || !steps.length) return null;
    const model = steps[steps.length - 1];
    const index = Array.isArray(model.args) ? model.args.indexOf(pending.call) + 1 : 0;
    return st.tasks.find((t) => t.step === model.seq && t.call === index) || null;
  }

  // --- a server's question to the operator (elicitation) ---------------------

  // renderQuestion shows the question a run waiting for input waits on,
  // read from the run's detail, with a field for each property of its
  // requested schema. The server's text is shown as text; a url question's
  // address is shown, never opened or made a link.
  function renderQuestion(st) {
    const r = st.run;
    const waiting = r && r.status === 'waiting_for_input';
    $('question').hidden = !(waiting && st.question);
    if (!waiting) { st.question = null; return; }
    if (!st.questionLoading && !st.question) loadQuestion(st);
  }

  async function loadQuestion(st) {
    st.questionLoading = true;
    try {
      const d = await api('GET', '/v1/runs/' + encodeURIComponent(st.id));
      if (st.stopped) return;
      const q = d.question || null;
      st.question = q;
      if (!q) { $('question').hidden = true; return; }
      showQuestion(q);
      $('question').hidden = false;
    } catch (e) { /* the stream reports what matters */ } finally {
      st.questionLoading = false;
    }
  }

  function showQuestion(q) {
    $('question-server').textContent = q.server;
    $('question-tool').textContent = q.tool;
    $('question-message').textContent = q.message;
    $('question-url-part').hidden = q.mode !== 'url';
    $('question-url').textContent = q.mode === 'url' ? q.url : '';
    $('question-expires').textContent = 'The server waits until ' + fmtTime(q.expires_at) + '.';
    $('question-status').textContent = '';
    $('answer-button').textContent = q.mode === 'url' ? 'Done: I have been there' : 'Answer';
    const fields = [];
    const schema = q.schema || {};
    const props = schema.properties || {};
    const required = new Set(schema.required || []);
    for (const name of Object.keys(props).sort()) {
      const p = props[name] || {};
      const id = 'q-field-' + name.replace(/[^A-Za-z0-9_-]/g, '_');
      const label = el('label', { for: id, text: (p.title || name) + (required.has(name) ? ' (required)' : '') });
      let input;
      if (Array.isArray(p.enum)) {
        input = el('select', { id });
        if (!required.has(name)) input.append(el('option', { value: '', text: '—' }));
        for (const v of p.enum) input.append(el('option', { value: String(v), text: String(v) }));
      } else if (p.type === 'boolean') {
        input = el('input', { id, type: 'checkbox' });
        if (p.default === true) input.checked = true;
      } else {
        const type = p.type === 'integer' || p.type === 'number' ? 'number'
          : p.format === 'password' || p.writeOnly ? 'password'
            : p.format === 'email' ? 'email' : p.format === 'uri' ? 'url' : p.format === 'date' ? 'date' : 'text';
        input = el('input', { id, type, autocomplete: 'off', spellcheck: 'false' });
        if (p.type === 'integer') input.step = '1';
        if (required.has(name)) input.required = true;
        if (p.default !== undefined) input.value = String(p.default);
      }
      input.dataset.name = name;
      input.dataset.type = p.type || 'string';
      const row = el('p', { class: 'field' }, label, input);
      if (p.description) row.append(el('span', { class: 'muted', text: p.description }));
      fields.push(row);
    }
    $('question-fields').replaceChildren(...fields);
  }

  // questionContent reads the form's fields into an answer, typed by the
  // schema; an empty optional field is left out.
  function questionContent() {
    const content = {};
    for (const input of $('question-fields').querySelectorAll('[data-name]')) {
      const name = input.dataset.name;
      const type = input.dataset.type;
      if (type === 'boolean') { content[name] = input.checked; continue; }
      if (input.value === '') continue;
      content[name] = type === 'integer' ? parseInt(input.value, 10) : type === 'number' ? Number(input.value) : input.value;
    }
    return content;
  }

  async function reply(verb) {
    const st = current;
    if (!st || !st.question) return;
    const q = st.question;
    $('answer-button').disabled = true;
    $('decline-button').disabled = true;
    $('question-status').textContent = verb === 'answer' ? 'Answering…' : 'Declining…';
    const body = { question: q.id };
    if (verb === 'answer' && q.mode !== 'url') body.content = questionContent();
    try {
      const res = await api('POST', '/v1/runs/' + encodeURIComponent(st.id) + '/' + verb, body);
      $('question-status').textContent = verb === 'answer' ? 'Answered. The server has it; the run goes on.' : 'Declined. The server is told; the run goes on.';
      st.run = res.run;
      renderRun(st);
    } catch (e) {
      if (e instanceof AuthNeeded) return;
      if (e.status === 409) {
        $('question-status').textContent = 'The run no longer waits on this question (answered, ended or cancelled); nothing was sent.';
        st.question = null; // look again: it may wait on another one now
        if (st.run) renderRun(st);
      } else {
        $('question-status').textContent = 'Could not ' + verb + ': ' + e.message;
      }
    } finally {
      $('answer-button').disabled = false;
      $('decline-button').disabled = false;
    }
  }
  $('question-form').addEventListener('submit', (ev) => { ev.preventDefault(); reply('answer'); });
  $('decline-button').addEventListener('click', () => reply('decline'));

  function renderTimeline(st, pending) {
    const steps = [...st.steps.values()].sort((a, b) => a.seq - b.seq);
    const items = steps.map((s) => {
      const li = el('li', { class: 'k-' + s.kind + (s.outcome ? ' o-' + s.outcome : ''), 'data-seq': String(s.seq) });
      if (s.kind === 'model') {
        const calls = Array.isArray(s.args) ? s.args.map((c) => c.name).join(', ') : '';
        li.append(el('p', { class: 'what', text: 'Model turn ' + s.round + (calls ? ': asks for ' + calls : ': final answer') }));
        if (s.text) li.append(el('p', { text: s.text }));
      } else if (s.kind === 'tool') {
        li.append(el('p', { class: 'what' }, 'Tool call ' + s.tool + ' — ', el('span', { class: 'o-' + s.outcome, text: s.outcome })));
        if (s.text) li.append(el('pre', { text: s.text }));
      } else if (s.kind === 'log') {
        const a = s.args || {};
        li.classList.add('lvl-' + String(a.level || 'info').replace(/[^a-z]/g, ''));
        li.append(el('p', { class: 'what', text: 'Server log from ' + (a.server || '?') + ' (' + (a.level || '?') + (a.logger ? ', ' + a.logger : '') + ')' }));
        if (s.text) li.append(el('pre', { text: s.text }));
      } else if (s.kind === 'input') {
        li.append(el('p', { class: 'what' }, 'Question from the server — ', el('span', { class: 'o-' + s.outcome, text: s.outcome === 'ok' ? 'answered' : s.outcome })));
        if (s.text) li.append(el('pre', { text: s.text }));
      } else if (s.kind === 'approval') {
        li.append(el('p', { class: 'what', text: (s.outcome === 'ok' ? 'Approved ' : 'Denied ') + s.tool + ' — ' + (s.text || '') }));
        if (s.args) li.append(el('pre', { text: pretty(s.args) }));
      } else {
        li.append(el('p', { class: 'what', text: s.kind }));
      }
      li.append(el('p', { class: 'meta', text: fmtTime(s.at) + ' · took ' + fmtMS(s.duration_ms) }));
      return li;
    });
    const r = st.run;
    if (r && pending && (r.status === 'running' || r.status === 'queued')) {
      const task = taskOf(st, pending);
      const what = task ? ' — task ' + task.task_id + ' on ' + task.server + ': ' + (TASK_STATES[task.state] || task.state) : ' — in progress';
      items.push(el('li', { class: 'k-tool progress', id: 'in-progress' },
        el('p', { class: 'what', text: 'Tool call ' + pending.call.name + what }),
        el('p', { class: 'meta', id: 'in-progress-time', text: elapsed(pending.since) })));
    }
    $('timeline').replaceChildren(...items);
  }

  function elapsed(since) {
    const s = Math.max(0, (Date.now() - new Date(since).getTime()) / 1000);
    return 'running for ' + s.toFixed(0) + ' s';
  }

  function renderProgress(st) {
    const p = $('in-progress-time');
    const pending = pendingCall(st);
    if (p && pending) p.textContent = elapsed(pending.since);
  }

  const ACTIONS = {
    http_call: 'request made',
    http_call_cancelled: 'cancelled in flight',
    http_call_cancelled_before_send: 'cancelled before send',
    call_approved: 'tool call approved',
    call_denied: 'tool call denied',
    call_approval_refused: 'approval refused',
    tool_call: 'tool call',
    task_cancel: 'MCP task cancelled (tasks/cancel)',
    cancel_outcome: 'what became of the cancelled call',
    input_answered: 'question answered',
    input_declined: 'question declined',
    api_denied: 'request refused',
    api_denied_repeated: 'requests refused again',
  };

  // What a cancel_outcome row's reason means (audit.ActionCancelOutcome).
  const CALL_AFTER_CANCEL = {
    confirmed: 'Confirmed: the server stopped (its process exited)',
    completed_anyway: 'Completed anyway: a result came after the cancel, the server did not stop',
    unconfirmed: 'Unconfirmed: the server said nothing after the cancel',
  };

  function renderAudit(st) {
    const rows = st.audit.map((a) => el('tr', { 'data-action': a.action },
      el('td', { text: fmtTime(a.time) }),
      el('td', {}, el('code', { text: a.action }), ' ', ACTIONS[a.action] || '', a.action.startsWith('call_') || a.action.startsWith('input_') ? ' ' + (a.purpose || '') : ''),
      el('td', { text: [a.method, (a.host || '') + (a.path || '')].filter(Boolean).join(' ') }),
      el('td', { text: a.status ? String(a.status) : '—' }),
      el('td', { text: fmtMS(a.duration_ms) }),
      el('td', {}, a.action === 'tool_call'
        ? el('span', { text: 'Ended: ' + (a.reason || '') })
        : a.action === 'cancel_outcome'
          ? el('span', { class: a.ok ? '' : 'sent-yes', text: CALL_AFTER_CANCEL[a.reason] || a.reason || '' })
        : a.sent
          ? el('span', { class: 'sent-yes', text: 'Sent: the request (and its credential, if any) left' })
          : el('span', { class: 'sent-no', text: 'Not sent: nothing left' }))));
    $('audit-table').tBodies[0].replaceChildren(...rows);
    $('audit-table').hidden = rows.length === 0;
    $('audit-empty').hidden = rows.length > 0;
    $('audit-more').hidden = !st.auditOlder;
  }

  $('cancel-button').addEventListener('click', async () => {
    const st = current;
    if (!st) return;
    st.cancel = { start: performance.now(), done: false };
    $('cancel-button').disabled = true;
    $('cancel-status').textContent = 'Cancelling…';
    try {
      const res = await api('POST', '/v1/runs/' + encodeURIComponent(st.id) + '/cancel');
      st.cancel.tookMS = res.took_ms;
      st.cancel.tasks = taskCancelText(res.tasks || []);
      $('cancel-status').textContent = 'Cancel accepted in ' + fmtMS(res.took_ms) + '; waiting for the run to reach cancelled…' + st.cancel.tasks;
      st.run = res.run;
      renderRun(st);
    } catch (e) {
      st.cancel.done = true;
      if (!(e instanceof AuthNeeded)) $('cancel-status').textContent = e.status === 409 ? 'The run had already finished.' : 'Could not cancel: ' + e.message;
      if (st.run) renderRun(st);
    }
  });

  // taskCancelText says what a cancel did about the run's MCP tasks.
  function taskCancelText(tasks) {
    return tasks.map((t) => ' Task ' + t.task_id + ' on ' + t.server + ': ' +
      (t.by_holder && !t.outcome ? 'the worker holding the call sends tasks/cancel.' : (CANCEL_OUTCOMES[t.outcome] || t.outcome) + '.')).join('');
  }

  async function decide(verb) {
    const st = current;
    if (!st) return;
    $('approve-button').disabled = true;
    $('deny-button').disabled = true;
    $('approval-status').textContent = verb === 'approve' ? 'Approving…' : 'Denying…';
    const p = st.run && st.run.pending;
    const call = p ? { step: p.step, call: p.call, tool: p.tool, args_digest: p.args_digest } : undefined;
    try {
      const res = await api('POST', '/v1/runs/' + encodeURIComponent(st.id) + '/' + verb, call);
      $('approval-status').textContent = verb === 'approve' ? 'Approved.' : 'Denied.';
      st.run = res.run;
      renderRun(st);
    } catch (e) {
      if (e instanceof AuthNeeded) return;
      $('approval-status').textContent = e.status === 409 && call
        ? 'The run no longer waits on the call shown; nothing was decided. Look at the call it waits on now.'
        : 'Could not ' + verb + ': ' + e.message;
    } finally {
      $('approve-button').disabled = false;
      $('deny-button').disabled = false;
    }
  }
  $('approve-button').addEventListener('click', () => decide('approve'));
  $('deny-button').addEventListener('click', () => decide('deny'));

  // --- the servers and tools page -----------------------------------------------------

  const EFFECTS = ['read_only', 'idempotent_write', 'non_idempotent_write'];
  const yesNo = (b) => (b ? 'yes' : 'no');
  const words = (s) => (s || '').replaceAll('_', ' ');

  // serversPage lists the MCP servers and their tools. An admin's token
  // also gets the controls that change them — Import per server; enabled,
  // effect and needs-approval per tool, each applied at once — and any
  // other role the same tables read-only. The API enforces the roles: the
  // page only spares a viewer controls that would be refused.
  function serversPage() {
    show('servers-view');
    const st = { gone: false, admin: false, loaded: false };
    for (const id of ['import-status', 'tools-announce']) $(id).textContent = '';
    connectOutcome();
    $('manage-note').hidden = true;
    const note = (text) => { $('manage-note').textContent = text; $('manage-note').hidden = false; };
    (async () => {
      try {
        const me = await api('GET', '/v1/whoami');
        st.admin = me.role === 'admin';
        if (!st.admin) {
          note('Read-only: importing tools and changing their settings needs an admin token; this token (' +
            me.name + ') has the role ' + me.role + '.');
        }
      } catch (e) {
        if (e instanceof AuthNeeded) return;
        note('Read-only: could not tell what this token may do (' + e.message + ').');
      }
      if (st.gone) return;
      for (const th of document.querySelectorAll('#servers-view th.admin-only')) th.hidden = !st.admin;
      refreshServers(st);
    })();
    setLive('');
    return () => { st.gone = true; };
  }

  // refreshServers loads both tables again. Only the first load hides
  // them, and a control that had the focus has it again in its new row:
  // refreshing after an import must not lose a keyboard user's place.
  function refreshServers(st) {
    const first = !st.loaded;
    st.loaded = true;
    loadTable(st, first, '/v1/servers', 'servers', 'servers-table', 'servers-status', (s) => serverRow(st, s));
    loadTable(st, first, '/v1/tools', 'tools', 'tools-table', 'tools-status', (t) => toolRow(st, t));
  }

  async function loadTable(st, first, path, key, table, status, row) {
    if (first) {
      $(status).textContent = 'Loading…';
      $(table).hidden = true;
    }
    try {
      const data = await api('GET', path);
      if (st.gone) return;
      const items = data[key] || [];
      const active = document.activeElement;
      const focusKey = active && $(table).contains(active) ? active.dataset.key : undefined;
      $(table).tBodies[0].replaceChildren(...items.map(row));
      $(table).hidden = items.length === 0;
      setText(status, items.length === 0 ? 'None.' : '');
      if (focusKey) {
        const again = $(table).querySelector('[data-key="' + CSS.escape(focusKey) + '"]');
        if (again) again.focus();
      }
    } catch (e) {
      if (st.gone || e instanceof AuthNeeded) return;
      $(status).textContent = 'Could not load: ' + e.message;
    }
  }

  function serverRow(st, s) {
    const tr = el('tr', { 'data-server': s.name },
      el('td', { text: s.name }), el('td', { text: s.transport || '' }),
      el('td', { text: s.url || (Array.isArray(s.command) ? s.command.join(' ') : s.command || '') }),
      el('td', { text: yesNo(s.enabled) }), el('td', {}, String(s.tools ?? ''), toolsChange(s.tools_change)),
      el('td', { class: s.error ? 'error' : '', text: importProblem(st, s) }));
    if (st.admin) {
      const b = el('button', { type: 'button', class: 'small', 'data-key': 'import:' + s.name,
        'aria-label': 'Import the tools of server ' + s.name, text: 'Import tools' });
      b.addEventListener('click', () => importServer(st, s.name, b));
      const cell = el('td', {}, b);
      if (s.auth === 'oauth') {
        const c = el('button', { type: 'button', class: "small", 'data-key': 'connect:' + s.name,
          'aria-label': 'Connect server ' + s.name + ': log in to its authorization server', text: 'Connect' });
        c.addEventListener('click', () => connectServer(s.name, c));
        cell.append(' ', c);
      }
      tr.append(cell);
    }
    return tr;
  }

  // connectServer starts the server's OAuth login: the API answers with
  // the authorization server's URL, and this window goes there; the
  // authorization server sends it back to the API, which stores the token
  // and returns to this page (?connected=NAME).
  async function connectServer(name, button) {
    if (button.getAttribute('aria-disabled') === 'true') return;
    button.setAttribute('aria-disabled', 'true');
    const status = $('import-status');
    status.className = '';
    status.textContent = 'Connecting ' + name + '…';
    try {
      const res = await api('POST', '/v1/servers/' + encodeURIComponent(name) + '/connect');
      if (res.authorize_url) {
        window.location.assign(res.authorize_url);
        return;
      }
      status.className = 'ok';
      status.textContent = 'Connected ' + name + '.';
    } catch (e) {
      if (e instanceof AuthNeeded) return;
      status.className = 'error';
      status.textContent = 'Could not connect ' + name + ': ' + e.message;
    } finally {
      button.removeAttribute('aria-disabled');
    }
  }

  // connectOutcome says how a Connect that came back to this page ended,
  // once, and takes it out of the address.
  function connectOutcome() {
    const q = new URLSearchParams(window.location.search);
    const ok = q.get('connected');
    const failed = q.get('connect_error');
    if (!ok && !failed) return;
    const status = $('import-status');
    status.className = ok ? 'ok' : 'error';
    status.textContent = ok ? 'Connected ' + ok + ': andon holds its token now.' :
      'Could not connect ' + failed + '; the API\'s log says why. Try Connect again, or andon auth login ' + failed + '.';
    history.replaceState(null, '', window.location.pathname + window.location.hash);
  }

  // toolsChange says when the server's tools last changed while andon ran,
  // and how: the tools added and removed (null if they never did).
  function toolsChange(c) {
    if (!c) return null;
    const why = c.why === 'unknown_tool' ? 'a call found a tool gone' : 'the server said so';
    const parts = [];
    if (c.added && c.added.length) parts.push(c.added.length + ' added (' + c.added.join(', ') + ')');
    if (c.removed && c.removed.length) parts.push(c.removed.length + ' removed (' + c.removed.join(', ') + ')');
    return el('span', { class: 'muted tools-change', text: ' · changed ' + fmtTime(c.at) + ' (' + why + '): ' + parts.join(', ') });
  }

  // importProblem says why a server's last import failed and when runs'
  // listings try it again (until then its tools are left out of them).
  function importProblem(st, s) {
    if (s.needs_login) {
      return 'Needs a login: ' + (st.admin ? 'Connect, or ' : '') + 'andon auth login ' + s.name + '.';
    }
    if (!s.error) return '';
    let text = s.error;
    if (s.failures > 1) text += ' (' + s.failures + ' failures in a row)';
    if (s.retry_at) text += '. Tried again from ' + fmtTime(s.retry_at) + (st.admin ? ', or now with Import tools.' : '.');
    return text;
  }

  // importServer lists the server's tools again. The button is marked
  // busy rather than disabled while it works: a disabled button would
  // drop the keyboard focus.
  async function importServer(st, name, button) {
    if (button.getAttribute('aria-disabled') === 'true') return;
    button.setAttribute('aria-disabled', 'true');
    const status = $('import-status');
    status.className = '';
    status.textContent = 'Importing the tools of ' + name + '…';
    try {
      const res = await api('POST', '/v1/servers/' + encodeURIComponent(name) + '/import');
      if (st.gone) return;
      const n = (res.tools || []).length;
      status.className = 'ok';
      status.textContent = 'Imported ' + n + (n === 1 ? ' tool' : ' tools') + ' from ' + name + '.';
    } catch (e) {
      if (st.gone || e instanceof AuthNeeded) return;
      status.className = 'error';
      status.textContent = 'Could not import the tools of ' + name + ': ' + e.message;
    } finally {
      button.removeAttribute('aria-disabled');
    }
    refreshServers(st);
  }

  const effectText = (t) => words(t.effect) + (t.effect_source ? ' (' + t.effect_source + ')' : '');

  function toolRow(st, t) {
    const tr = el('tr', { 'data-tool': t.name },
      el('td', {}, el('code', { text: t.name })), el('td', { text: t.server }));
    if (!st.admin) {
      tr.append(el('td', { text: effectText(t) }), el('td', { text: yesNo(t.requires_approval) }),
        el('td', { text: yesNo(t.enabled) }), el('td', { text: t.description || '' }));
      return tr;
    }
    // row.tool is the tool as the server last described it: what a control
    // goes back to when a change fails.
    const row = { tool: t, queue: Promise.resolve(), pending: 0 };
    const name = t.name;
    const effect = el('select', { 'data-key': 'effect:' + name, 'aria-label': 'Effect of ' + name },
      ...EFFECTS.map((e) => el('option', { value: e, text: words(e) })));
    if (!EFFECTS.includes(t.effect)) effect.append(el('option', { value: t.effect, text: words(t.effect) }));
    const source = el('span', { class: 'muted' });
    const approval = el('input', { type: 'checkbox', 'data-key': 'approval:' + name, 'aria-label': name + ' needs approval' });
    const enabled = el('input', { type: 'checkbox', 'data-key': 'enabled:' + name, 'aria-label': name + ' enabled' });
    const status = el('td', { class: 'row-status' });
    row.sync = () => {
      effect.value = row.tool.effect;
      source.textContent = row.tool.effect_source ? ' (' + row.tool.effect_source + ')' : '';
      approval.checked = row.tool.requires_approval;
      enabled.checked = row.tool.enabled;
    };
    row.sync();
    // Changes of one row go out one after another, in the order made.
    const change = (patch, what) => {
      row.pending++;
      row.queue = row.queue.then(() => patchTool(st, row, status, patch, what));
    };
    effect.addEventListener('change', () => change({ effect: effect.value }, 'effect ' + words(effect.value)));
    approval.addEventListener('change', () => change({ requires_approval: approval.checked },
      approval.checked ? 'needs approval' : 'needs no approval'));
    enabled.addEventListener('change', () => change({ enabled: enabled.checked }, enabled.checked ? 'enabled' : 'disabled'));
    tr.append(el('td', {}, effect, source), el('td', {}, approval), el('td', {}, enabled),
      el('td', { text: t.description || '' }), status);
    return tr;
  }

  async function patchTool(st, row, status, patch, what) {
    const name = row.tool.name;
    status.className = 'row-status';
    status.textContent = 'Saving…';
    let failed = false;
    try {
      row.tool = await api('PATCH', '/v1/tools/' + encodeURIComponent(name), patch);
      if (st.gone) return;
      status.className = 'row-status ok';
      status.textContent = 'Saved: ' + what + '.';
      $('tools-announce').textContent = name + ': saved, ' + what + '.';
    } catch (e) {
      if (st.gone || e instanceof AuthNeeded) return;
      failed = true;
      status.className = 'row-status error';
      status.textContent = 'Not saved: ' + e.message;
      $('tools-announce').textContent = name + ': not saved (' + what + '): ' + e.message;
    } finally {
      row.pending--;
    }
    // A control shows the server's value once nothing else is on its
    // way, and at once after a failure.
    if (failed || row.pending === 0) row.sync();
  }

  window.addEventListener('hashchange', route);
  route();
})();
