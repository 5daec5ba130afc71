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
    const st = { id, run: null, steps: new Map(), audit: [], cancel: null, timers: [], stopped: false };
    current = st;
    $('run-title').textContent = 'Run ' + id;
    $('run-error').hidden = true;
    delete $('run-status').dataset.status;
    for (const f of ['run-status', 'run-reason', 'run-fence', 'run-owner', 'run-prompt', 'run-created', 'run-finished', 'cancel-status', 'approval-status']) $(f).textContent = '';
    $('timeline').replaceChildren();
    $('audit-table').tBodies[0].replaceChildren();
    $('approval').hidden = true;
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
    const tick = setInterval(() => renderProgress(st), 1000);
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
      st.audit = d.audit || [];
      renderAudit(st);
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
        fmtMS(performance.now() - st.cancel.start) + ' after the click.';
    }
    const waiting = r.status === 'waiting_for_approval';
    const pending = pendingCall(st);
    $('approval').hidden = !waiting;
    if (waiting) {
      $('approval-tool').textContent = pending ? pending.call.name : 'a tool';
      $('approval-args').textContent = pending ? pretty(pending.call.arguments || {}) : '';
    }
    renderTimeline(st, pending);
  }

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
      } else if (s.kind === 'approval') {
        li.append(el('p', { class: 'what', text: (s.outcome === 'ok' ? 'Approved ' : 'Denied ') + s.tool + ' ' + (s.text || '') }));
      } else {
        li.append(el('p', { class: 'what', text: s.kind }));
      }
      li.append(el('p', { class: 'meta', text: fmtTime(s.at) + ' · took ' + fmtMS(s.duration_ms) }));
      return li;
    });
    const r = st.run;
    if (r && pending && (r.status === 'running' || r.status === 'queued')) {
      items.push(el('li', { class: 'k-tool progress', id: 'in-progress' },
        el('p', { class: 'what', text: 'Tool call ' + pending.call.name + ' — in progress' }),
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
  };

  function renderAudit(st) {
    const rows = st.audit.map((a) => el('tr', { 'data-action': a.action },
      el('td', { text: fmtTime(a.time) }),
      el('td', {}, el('code', { text: a.action }), ' ', ACTIONS[a.action] || ''),
      el('td', { text: [a.method, (a.host || '') + (a.path || '')].filter(Boolean).join(' ') }),
      el('td', { text: a.status ? String(a.status) : '—' }),
      el('td', { text: fmtMS(a.duration_ms) }),
      el('td', {}, a.sent
        ? el('span', { class: 'sent-yes', text: 'Sent: the request (and its credential, if any) left' })
        : el('span', { class: 'sent-no', text: 'Not sent: nothing left' }))));
    $('audit-table').tBodies[0].replaceChildren(...rows);
    $('audit-table').hidden = rows.length === 0;
    $('audit-empty').hidden = rows.length > 0;
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
      $('cancel-status').textContent = 'Cancel accepted in ' + fmtMS(res.took_ms) + '; waiting for the run to reach cancelled…';
      st.run = res.run;
      renderRun(st);
    } catch (e) {
      st.cancel.done = true;
      if (!(e instanceof AuthNeeded)) $('cancel-status').textContent = e.status === 409 ? 'The run had already finished.' : 'Could not cancel: ' + e.message;
      if (st.run) renderRun(st);
    }
  });

  async function decide(verb) {
    const st = current;
    if (!st) return;
    $('approve-button').disabled = true;
    $('deny-button').disabled = true;
    $('approval-status').textContent = verb === 'approve' ? 'Approving…' : 'Denying…';
    try {
      const res = await api('POST', '/v1/runs/' + encodeURIComponent(st.id) + '/' + verb);
      $('approval-status').textContent = verb === 'approve' ? 'Approved.' : 'Denied.';
      st.run = res.run;
      renderRun(st);
    } catch (e) {
      if (!(e instanceof AuthNeeded)) $('approval-status').textContent = 'Could not ' + verb + ': ' + e.message;
    } finally {
      $('approve-button').disabled = false;
      $('deny-button').disabled = false;
    }
  }
  $('approve-button').addEventListener('click', () => decide('approve'));
  $('deny-button').addEventListener('click', () => decide('deny'));

  // --- the servers and tools page -----------------------------------------------------

  function serversPage() {
    show('servers-view');
    let gone = false;
    const yesNo = (b) => (b ? 'yes' : 'no');
    async function load(path, key, table, status, row) {
      $(status).textContent = 'Loading…';
      $(table).hidden = true;
      try {
        const data = await api('GET', path);
        if (gone) return;
        const items = data[key] || [];
        $(table).tBodies[0].replaceChildren(...items.map(row));
        $(table).hidden = items.length === 0;
        $(status).textContent = items.length === 0 ? 'None.' : '';
      } catch (e) {
        if (gone || e instanceof AuthNeeded) return;
        $(status).textContent = e.status === 404 ? 'Not available on this server.' : 'Could not load: ' + e.message;
      }
    }
    load('/v1/servers', 'servers', 'servers-table', 'servers-status', (s) => el('tr', {},
      el('td', { text: s.name }), el('td', { text: s.transport || '' }),
      el('td', { text: s.url || (Array.isArray(s.command) ? s.command.join(' ') : s.command || '') }),
      el('td', { text: yesNo(s.enabled) }), el('td', { text: String(s.tools ?? '') }),
      el('td', { class: s.error ? 'error' : '', text: s.error || '' })));
    load('/v1/tools', 'tools', 'tools-table', 'tools-status', (t) => el('tr', {},
      el('td', {}, el('code', { text: t.name })), el('td', { text: t.server }),
      el('td', { text: (t.effect || '').replaceAll('_', ' ') + (t.effect_source ? ' (' + t.effect_source + ')' : '') }),
      el('td', { text: yesNo(t.requires_approval) }), el('td', { text: yesNo(t.enabled) }),
      el('td', { text: t.description || '' })));
    setLive('');
    return () => { gone = true; };
  }

  window.addEventListener('hashchange', route);
  route();
})();
