package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/andonhq/andon/token"
)

var _ token.Store = (*Store)(nil)

const tokenColumns = `id, name, role, hash, created_at, last_used_at, revoked_at`

// TokenCreate implements [token.Store].
func (s *Store) TokenCreate(ctx context.Context, t *token.Token) error {
	if _, err := s.d.exec(ctx, `INSERT INTO api_tokens (`+tokenColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		t.ID, t.Name, string(t.Role), t.Hash, nanos(t.CreatedAt), nanos(t.LastUsedAt), nanos(t.RevokedAt)); err != nil {
		return fmt.Errorf("sqlstore: storing token %s: %w", t.ID, err)
	}
	return nil
}

// TokenByHash implements [token.Store].
func (s *Store) TokenByHash(ctx context.Context, hash []byte) (*token.Token, error) {
	t, err := scanToken(s.d.queryRow(ctx, `SELECT `+tokenColumns+` FROM api_tokens WHERE hash = ?`, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, token.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: reading a token: %w", err)
	}
	return t, nil
}

// TokenList implements [token.Store].
func (s *Store) TokenList(ctx context.Context) ([]*token.Token, error) {
	rs, err := s.d.query(ctx, `SELECT `+tokenColumns+` FROM api_tokens ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: listing tokens: %w", err)
	}
	defer rs.Close()
	return collect(rs, "listing tokens", scanToken)
}

// TokenRevoke implements [token.Store].
func (s *Store) TokenRevoke(ctx context.Context, id string, at time.Time) error {
	n, err := s.d.exec(ctx, `UPDATE api_tokens SET revoked_at = CASE WHEN revoked_at = 0 THEN ? ELSE revoked_at END WHERE id = ?`,
		nanos(at), id)
	if err != nil {
		return fmt.Errorf("sqlstore: revoking token %s: %w", id, err)
	}
	if n == 0 {
		return token.ErrNotFound
	}
	return nil
}

// TokenTouch implements [token.Store].
func (s *Store) TokenTouch(ctx context.Context, id string, at time.Time) error {
	if _, err := s.d.exec(ctx, `UPDATE api_tokens SET last_used_at = ? WHERE id = ?`, nanos(at), id); err != nil {
		return fmt.Errorf("sqlstore: recording the use of token %s: %w", id, err)
	}
	return nil
}
