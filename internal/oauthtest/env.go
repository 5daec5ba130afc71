package oauthtest

import "testing"

// Config configures an [Env].
type Config struct {
	// RS configures the resource server.
	RS RSConfig
	// Clients are registered with the authorization server before it
	// starts.
	Clients []Client
	// AccessTokenTTL is the lifetime of the access tokens issued for the
	// resource server, in seconds. Zero means an hour.
	AccessTokenTTL int
}

// Env is an authorization server and a resource server that trusts it,
// both on 127.0.0.1, for one test.
type Env struct {
	AS *AS
	RS *ResourceServer
}

// Start starts an [Env]; both servers stop when the test ends. It skips the
// test without node (fails it under CI).
func Start(t testing.TB, cfg *Config) *Env {
	t.Helper()
	if cfg == nil {
		cfg = &Config{}
	}
	rs := NewResourceServer(t, &cfg.RS)
	res := rs.Resource()
	res.AccessTokenTTL = cfg.AccessTokenTTL
	as := StartAS(t, &ASConfig{Resources: []Resource{res}, Clients: cfg.Clients, AccessTokenTTL: cfg.AccessTokenTTL})
	rs.Start(as.Issuer)
	return &Env{AS: as, RS: rs}
}
