package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
)

// pages yields the items of a paginated listing (resources/list,
// prompts/list, …), page by page as the caller ranges over them, following
// nextCursor up to ClientOptions.MaxPages pages. key names the result's
// array. An error is yielded once, with the zero T, and ends the listing.
// opts applies to each page's request.
func pages[T any](c *Client, ctx context.Context, method, key string, opts *CallOptions) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		cursor := ""
		seen := map[string]bool{}
		var hint listingHint
		for page := 0; ; page++ {
			if page == c.opts.MaxPages {
				yield(zero, fmt.Errorf("mcp: %s: more than %d pages", method, c.opts.MaxPages))
				return
			}
			var res listResult
			if err := c.request(ctx, method, &listParams{Cursor: cursor}, opts, false, &res); err != nil {
				yield(zero, err)
				return
			}
			hint.add(decodePageHint(res.Items))
			var items []T
			if raw := res.Items[key]; len(raw) > 0 {
				if err := json.Unmarshal(raw, &items); err != nil {
					yield(zero, &ProtocolError{Reason: fmt.Sprintf("%s: malformed %s: %v", method, key, err)})
					return
				}
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			if res.NextCursor == "" {
				c.finishListing(key, &hint)
				return
			}
			if seen[res.NextCursor] {
				yield(zero, &ProtocolError{Reason: fmt.Sprintf("%s: cursor %q repeats", method, res.NextCursor)})
				return
			}
			seen[res.NextCursor] = true
			cursor = res.NextCursor
		}
	}
}

// listResult is one page of a listing: its array stays raw in Items until
// the caller's type decodes it.
type listResult struct {
	resultKind
	NextCursor string
	Items      map[string]json.RawMessage
}

func (r *listResult) UnmarshalJSON(data []byte) error {
	if err := json.Unmarshal(data, &r.resultKind); err != nil {
		return err
	}
	if err := json.Unmarshal(data, &r.Items); err != nil {
		return err
	}
	if raw, ok := r.Items["nextCursor"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &r.NextCursor); err != nil {
			return fmt.Errorf("nextCursor: %w", err)
		}
	}
	return nil
}
