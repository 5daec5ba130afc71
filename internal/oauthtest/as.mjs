// The test authorization server: oidc-provider on 127.0.0.1, a random port.
//
// argv[2] is a JSON configuration (see config in as.go). The first line on
// stdout is {"issuer": "http://127.0.0.1:PORT"}; every later line is one
// event, a JSON object that never holds a token, a code or a secret: what
// the server saw (grant types, clients, resources, scopes, outcomes).
//
// The user is always logged in and always consents: an interaction
// (login, then consent) is approved at once by a redirect, so a plain HTTP
// client with a cookie jar, or a headless browser, drives the whole flow.
import http from 'node:http';
import Provider, { errors } from 'oidc-provider';

const cfg = JSON.parse(process.argv[2] || '{}');
const accountId = 'test-user';

function log(event) {
  process.stdout.write(JSON.stringify({ at: new Date().toISOString(), ...event }) + '\n');
}

// stall holds token requests (while on), so a test can cancel one in flight.
let stallToken = !!cfg.stallToken;
const held = new Set();

const server = http.createServer();
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  const issuer = `http://127.0.0.1:${port}`;
  const resources = new Map((cfg.resources || []).map((r) => [r.resource, r]));

  const provider = new Provider(issuer, {
    clients: cfg.clients || [],
    cookies: { keys: ['andon-oauthtest-cookie-key'] },
    pkce: { required: () => true },
    // Resource scopes are listed too, so clients may be registered for them
    // and discovery advertises them.
    scopes: ['openid', 'offline_access', ...new Set((cfg.resources || []).flatMap((r) => r.scopes || []))],
    claims: { openid: ['sub'] },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true },
      clientCredentials: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, indicator) => {
          const r = resources.get(indicator);
          if (!r) throw new errors.InvalidTarget();
          return {
            scope: (r.scopes || []).join(' '),
            audience: indicator,
            accessTokenTTL: r.accessTokenTTL || 3600,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
    issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
    interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
    ttl: { ClientCredentials: cfg.accessTokenTTL || 3600 },
  });

  provider.on('grant.success', (ctx) => {
    const p = ctx.oidc.params || {};
    log({ event: 'grant.success', grant_type: p.grant_type, client_id: ctx.oidc.client?.clientId, resource: p.resource, scope: p.scope });
  });
  provider.on('grant.error', (ctx, err) => {
    const p = ctx.oidc.params || {};
    log({ event: 'grant.error', grant_type: p.grant_type, client_id: ctx.oidc.client?.clientId, error: err.error || err.message });
  });
  provider.on('authorization.success', (ctx) => {
    const p = ctx.oidc.params || {};
    log({ event: 'authorization.success', client_id: p.client_id, resource: p.resource, scope: p.scope, code_challenge_method: p.code_challenge_method });
  });
  provider.on('authorization.error', (ctx, err) => {
    log({ event: 'authorization.error', error: err.error || err.message, description: err.error_description });
  });
  provider.on('registration_create.success', (ctx, client) => {
    log({ event: 'registration', client_id: client.clientId, auth_method: client.tokenEndpointAuthMethod, redirect_uris: client.redirectUris, grant_types: client.grantTypes });
  });
  provider.on('registration_create.error', (ctx, err) => {
    log({ event: 'registration.error', error: err.error || err.message, description: err.error_description });
  });
  provider.on('server_error', (ctx, err) => log({ event: 'server_error', error: String(err) }));

  // interact approves every interaction: login as the test user, then
  // consent to whatever scopes and resources the client asked for.
  async function interact(req, res) {
    const details = await provider.interactionDetails(req, res);
    const { prompt, params } = details;
    if (prompt.name === 'login') {
      log({ event: 'interaction', prompt: 'login', client_id: params.client_id });
      return provider.interactionFinished(req, res, { login: { accountId } }, { mergeWithLastSubmission: false });
    }
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId, clientId: params.client_id });
    const d = prompt.details || {};
    if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(' '));
    if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
    for (const [indicator, scopes] of Object.entries(d.missingResourceScopes || {})) {
      grant.addResourceScope(indicator, scopes.join(' '));
    }
    const grantId = await grant.save();
    log({ event: 'interaction', prompt: prompt.name, client_id: params.client_id });
    return provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
  }

  const callback = provider.callback();
  server.on('request', (req, res) => {
    const url = new URL(req.url, issuer);
    log({ event: 'request', method: req.method, path: url.pathname });
    if (url.pathname === '/.well-known/oauth-authorization-server') {
      req.url = '/.well-known/openid-configuration'; // RFC 8414 beside OpenID discovery
    }
    if (url.pathname.startsWith('/interaction/')) {
      interact(req, res).catch((err) => {
        log({ event: 'interaction.error', error: String(err) });
        res.statusCode = 500;
        res.end('interaction failed');
      });
      return;
    }
    if (url.pathname === '/__test/stall-token') {
      stallToken = url.searchParams.get('on') === '1';
      if (!stallToken) for (const release of held) release();
      res.end('ok');
      return;
    }
    if (url.pathname === '/token' && stallToken) {
      log({ event: 'token.held' });
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        held.delete(release);
        callback(req, res);
      };
      held.add(release);
      res.on('close', () => {
        if (!released && !res.writableEnded) {
          held.delete(release);
          released = true;
          log({ event: 'token.abandoned' });
        }
      });
      return;
    }
    callback(req, res);
  });

  process.stdout.write(JSON.stringify({ issuer }) + '\n');
});

process.on('SIGTERM', () => server.close(() => process.exit(0)));
