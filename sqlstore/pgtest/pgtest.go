// Package pgtest gives tests a PostgreSQL database to work in: a fresh
// schema per test, on the server that ANDON_TEST_POSTGRES names (or, without
// it, on 127.0.0.1:5432, database test, as user postgres or root without a
// password). Without a server, a test fails when the environment variable CI
// is set — CI must not pass by skipping — and is skipped otherwise.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Env names the environment variable holding the test server's DSN (a
// DSN whose user may create schemas in its database).
const Env = "ANDON_TEST_POSTGRES"

var defaultDSNs = []string{
	"postgres://postgres@127.0.0.1:5432/test?sslmode=disable",
	"postgres://root@127.0.0.1:5432/test?sslmode=disable",
}

// server finds, once, a DSN that connects.
var server = sync.OnceValues(func() (string, error) {
	dsns := defaultDSNs
	if dsn := os.Getenv(Env); dsn != "" {
		dsns = []string{dsn}
	}
	var errs []error
	for _, dsn := range dsns {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := Exec(ctx, dsn, `SELECT 1`)
		cancel()
		if err == nil {
			return dsn, nil
		}
		errs = append(errs, err)
	}
	return "", errors.Join(errs...)
})

// DSN returns the test server's DSN, or fails or skips t (see the package
// documentation).
func DSN(t testing.TB) string {
	t.Helper()
	dsn, err := server()
	if err == nil {
		return dsn
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("PostgreSQL is unreachable and CI is set, so its tests may not be skipped "+
			"(set %s to a DSN, or start the server; .ci/run does): %v", Env, err)
	}
	t.Skipf("PostgreSQL is unreachable, skipping (start it with "+
		"`pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start`, "+
		"or set %s to a DSN): %v", Env, err)
	return ""
}

// slots bounds the schemas (and so the connection pools of the tests
// using them) alive at once in one test binary, whatever -parallel is, to
// stay well below the server's max_connections.
var slots = make(chan struct{}, 8)

// Schema creates a fresh schema for t, dropped at cleanup, and returns a
// DSN whose connections use it (search_path). Cleanups registered later
// (processes using it) run before the drop. At most a few schemas live at
// once: Schema waits for one to be dropped.
func Schema(t testing.TB) string {
	t.Helper()
	dsn := DSN(t)
	select {
	case slots <- struct{}{}:
	case <-t.Context().Done():
		t.Fatal(t.Context().Err())
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	schema := "test_" + hex.EncodeToString(b[:])
	if err := Exec(context.Background(), dsn, `CREATE SCHEMA `+schema); err != nil {
		<-slots
		t.Fatalf("creating schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		defer func() { <-slots }()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := Exec(ctx, dsn, `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	return WithParams(dsn, map[string]string{"search_path": schema})
}

// Exec runs one statement on a connection of its own.
func Exec(ctx context.Context, dsn, stmt string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, stmt)
	return errors.Join(err, conn.Close(context.WithoutCancel(ctx)))
}

// WithParams adds runtime or pool parameters to a DSN of either form (URL
// or key=value pairs).
func WithParams(dsn string, params map[string]string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err == nil {
			q := u.Query()
			for k, v := range params {
				q.Set(k, v)
			}
			u.RawQuery = q.Encode()
			return u.String()
		}
	}
	for k, v := range params {
		dsn += " " + k + "=" + v
	}
	return dsn
}
