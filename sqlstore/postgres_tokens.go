package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/andonhq/andon/token"
)

var _ token.Store = (*PGStore)(nil)

// TokenCreate implements [token.Store].
func (s *PGStore) TokenCreate(ctx context.Context, t *token.Token) error {
	if _, err := s.pool.Exec(ctx, `INSERT INTO api_tokens (`+tokenColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		t.ID, t.Name, string(t.Role), t.Hash, nanos(t.CreatedAt), nanos(t.LastUsedAt), nanos(t.RevokedAt)); err != nil {
		return fmt.Errorf("sqlstore: storing token %s: %w", t.ID, err)
	}
	return nil
}

// TokenByHash implements [token.Store].
func (s *PGStore) TokenByHash(ctx context.Context, hash []byte) (*token.Token, error) {
	t, err := scanToken(s.pool.QueryRow(ctx, `SELECT `+tokenColumns+` FROM api_tokens WHERE hash = $1`, hash))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, token.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: reading a token: %w", err)
	}
	return t, nil
}

// TokenList implements [token.Store].
func (s *PGStore) TokenList(ctx context.Context) ([]*token.Token, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+tokenColumns+` FROM api_tokens ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: listing tokens: %w", err)
	}
	defer rows.Close()
	return collect(rows, "listing tokens", scanToken)
}

// TokenRevoke implements [token.Store].
func (s *PGStore) TokenRevoke(ctx context.Context, id string, at time.Time) error {
	tag, err := s.pool.Exec(ctx, `UPDATE api_tokens SET revoked_at = CASE WHEN revoked_at = 0 THEN $1 ELSE revoked_at END WHERE id = $2`,
		nanos(at), id)
	if err != nil {
		return fmt.Errorf("sqlstore: revoking token %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return token.ErrNotFound
	}
	return nil
}

// TokenTouch implements [token.Store].
func (s *PGStore) TokenTouch(ctx context.Context, id string, at time.Time) error {
	if _, err := s.pool.Exec(ctx, `UPDATE api_tokens SET last_used_at = $1 WHERE id = $2`, nanos(at), id); err != nil {
		return fmt.Errorf("sqlstore: recording the use of token %s: %w", id, err)
	}
	return nil
}
