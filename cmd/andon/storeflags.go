package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"

	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/node"
	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/tracing"
	"github.com/andonhq/andon/vault"
)

// exitFailure is the exit code of the secret and audit commands when they
// fail for a reason other than usage: a wrong or missing key, an unreadable
// store, a broken audit chain.
const exitFailure = 1

// auditKeyLabel labels the key the audit log is chained with, as the node
// derives it.
const auditKeyLabel = node.AuditKeyLabel

// storeFlags are the flags of every command that opens andon's database.
type storeFlags struct {
	db      string
	keyFile string
}

// envDB names the environment variable that gives --db its default: a
// PostgreSQL URL with a password is better kept out of the command line,
// which every user of the machine can read.
const envDB = "ANDON_DB"

func addStoreFlags(fs *flagSet) *storeFlags {
	f := &storeFlags{db: "andon.db"}
	if v := os.Getenv(envDB); v != "" {
		f.db = v
	}
	fs.Var(dbValue{&f.db}, "db", "the `database`: a SQLite file, or a PostgreSQL URL (postgres://user@host:5432/db?sslmode=…&search_path=schema), shared by many andon processes; the default comes from "+envDB+" if set")
	fs.StringVar(&f.keyFile, "key-file", "andon.key", "the master key `file`, used when "+vault.EnvMasterKey+" is not set; created (mode 0600) on first use of a new database")
	return f
}

// dbValue is the --db flag. It shows its value (and so its default, in -h)
// without a password.
type dbValue struct{ db *string }

func (v dbValue) String() string {
	if v.db == nil {
		return ""
	}
	return (&storeFlags{db: *v.db}).where()
}

func (v dbValue) Set(s string) error {
	*v.db = s
	return nil
}

// isPostgres reports whether a --db value names a PostgreSQL database rather
// than a SQLite file.
func isPostgres(db string) bool { return sqlstore.IsPostgres(db) }

// where names the database for messages: a file's path, or a PostgreSQL URL
// without its user, password or any other secret.
func (f *storeFlags) where() string {
	if !isPostgres(f.db) {
		return f.db
	}
	return redactDSN(f.db)
}

// redactDSN returns a PostgreSQL URL without its user information and
// without the query parameters that may hold secrets.
func redactDSN(dsn string) string {
	scheme, _, _ := strings.Cut(dsn, "://")
	u, err := url.Parse(dsn)
	if err != nil {
		return scheme + "://(unparsable URL)" // never echo it: it may hold a password
	}
	u.User = nil
	q := u.Query()
	changed := false
	for k := range q {
		if strings.Contains(strings.ToLower(k), "password") {
			q.Del(k)
			changed = true
		}
	}
	if changed {
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// dsnPassword returns the password a PostgreSQL URL carries, if any.
func dsnPassword(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return ""
	}
	if p, ok := u.User.Password(); ok {
		return p
	}
	return u.Query().Get("password")
}

// openFor opens the database for the command name, reporting a failure as
// one "andon: name: …" line (nil then). With checkKey, it also checks that
// the master key opens the secrets already sealed, before anything is done.
func (f *storeFlags) openFor(ctx context.Context, e *env, name string, checkKey bool) *stores {
	s, err := f.open(ctx, e)
	if err != nil {
		e.errorf("%s: %s", name, f.explain(err))
		return nil
	}
	if checkKey {
		if err := s.vault.Check(ctx); err != nil {
			e.errorf("%s: %s", name, f.explain(err))
			s.close()
			return nil
		}
	}
	return s
}

// openStore opens (and migrates) the database alone, without the key.
func (f *storeFlags) openStore(ctx context.Context) (*sqlstore.Store, error) {
	return sqlstore.Open(ctx, f.db)
}

// stores is an open database with its vault and audit log.
type stores struct {
	store *sqlstore.Store
	key   vault.Key
	// keyFromEnv reports that the key came from the environment.
	keyFromEnv bool
	vault      *vault.Vault
	// tracing is the process's (OTEL_*): flushed by close, before the
	// store closes. Nil: none set up.
	tracing *tracing.Tracing
}

// open opens the database and loads the master key. On a database holding
// no secret, a missing key file is created with a fresh key (and a message
// on stderr); otherwise a missing key is an error that changes nothing.
func (f *storeFlags) open(ctx context.Context, e *env) (*stores, error) {
	st, err := f.openStore(ctx)
	if err != nil {
		return nil, err
	}
	s := &stores{store: st}
	if err := s.loadKey(ctx, e, f); err != nil {
		_ = st.Close()
		return nil, err
	}
	s.vault = vault.New(st, s.key)
	return s, nil
}

func (s *stores) loadKey(ctx context.Context, e *env, f *storeFlags) error {
	if env := os.Getenv(vault.EnvMasterKey); env != "" {
		k, err := vault.ParseKey(env)
		if err != nil {
			return fmt.Errorf("%s: %w", vault.EnvMasterKey, err)
		}
		s.key, s.keyFromEnv = k, true
		return nil
	}
	k, err := vault.ReadKeyFile(f.keyFile)
	if err == nil {
		s.key = k
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	recs, lerr := s.store.SecretList(ctx)
	if lerr != nil {
		return lerr
	}
	if len(recs) > 0 {
		return fmt.Errorf("no master key: %s is not set and %s does not exist, but %s holds %d sealed records (sealed with key %s); nothing was changed",
			vault.EnvMasterKey, f.keyFile, f.where(), len(recs), recs[0].KeyID)
	}
	if s.key, err = vault.NewKey(); err != nil {
		return err
	}
	if err := vault.WriteKeyFile(f.keyFile, s.key); err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "andon: generated a new master key (ID %s) in %s (mode 0600); keep it safe: without it, the secrets in %s cannot be read\n",
		s.key.ID(), f.keyFile, f.where())
	return nil
}

// auditLog returns the audit log, chained with a key derived from the vault.
func (s *stores) auditLog(ctx context.Context) (*audit.Log, error) {
	key, err := s.vault.DeriveKey(ctx, auditKeyLabel)
	if err != nil {
		return nil, err
	}
	return audit.New(s.store, key), nil
}

// record writes an audit row for a change made from the CLI. A failure is
// reported but does not undo the change.
func (s *stores) record(ctx context.Context, e *env, action audit.Action, name string) {
	log, err := s.auditLog(ctx)
	if err == nil {
		_, err = log.Record(ctx, audit.Entry{Action: action, Purpose: "cli " + name, OK: true, Reason: string(action)})
	}
	if err != nil {
		e.errorf("writing the audit row: %v", err)
	}
}

func (s *stores) close() {
	if s.tracing.Enabled() {
		ctx, cancel := context.WithTimeout(context.Background(), tracingFlushTimeout)
		if err := s.tracing.Shutdown(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "andon: %v\n", err)
		}
		cancel()
	}
	_ = s.store.Close()
}

// explain adds what the operator can do about err, for the errors that have
// a remedy. It never repeats the database's password, whatever a driver put
// in its error (the drivers redact it already; this is the second line, for
// passwords long enough to be told from ordinary text).
func (f *storeFlags) explain(err error) string {
	msg := err.Error()
	if pw := dsnPassword(f.db); len(pw) >= 4 && isPostgres(f.db) {
		msg = strings.ReplaceAll(msg, pw, "xxxxx")
	}
	if errors.Is(err, vault.ErrWrongKey) {
		msg += fmt.Sprintf(" (set %s or --key-file to the key the database was sealed with", vault.EnvMasterKey)
		if _, serr := os.Stat(f.keyFile + ".new"); serr == nil {
			msg += fmt.Sprintf("; %s.new exists: a key rotation may have been interrupted after re-sealing, and that file may hold the key", f.keyFile)
		}
		msg += ")"
	}
	return msg
}
