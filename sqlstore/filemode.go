package sqlstore

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
)

// fileMode is the mode of the SQLite database: it holds prompts, results,
// the audit log and sealed secrets, which no other local user may read.
// SQLite gives the -wal and -shm files it creates the database's mode, so
// they get it too.
const fileMode fs.FileMode = 0o600

// OpenOption configures [Open].
type OpenOption func(*openConfig)

type openConfig struct {
	logger  *slog.Logger
	counter *StatementCounter // nil: nothing counted
}

// OpenLogger sets where Open warns of a database file that other local
// users may read. The default is slog.Default().
func OpenLogger(l *slog.Logger) OpenOption {
	return func(c *openConfig) {
		if l != nil {
			c.logger = l
		}
	}
}

// prepareFile creates the database file at path with [fileMode] if it does
// not exist, whatever the umask, before SQLite creates it with 0644. Of a
// database that exists, it changes nothing (an operator may have opened it
// to a group on purpose) but warns of each of its files (the database, -wal
// and -shm) that is open to other users.
func prepareFile(path string, logger *slog.Logger) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, fileMode)
	if err == nil {
		// OpenFile's mode passes through the umask, which may leave less
		// than 0600 (and SQLite unable to write) or, with a group-writable
		// default, is not what we ask for anyway: set it exactly.
		err = f.Chmod(fileMode)
		return errors.Join(err, f.Close())
	}
	if !errors.Is(err, fs.ErrExist) {
		return err
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil {
			continue // -wal and -shm exist only while the database is open
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			logger.Warn("sqlstore: a database file is open to other local users; they can read prompts, results, sealed secrets and the audit log (chmod 600 it)",
				"file", p, "mode", fmt.Sprintf("%#o", perm))
		}
	}
	return nil
}
