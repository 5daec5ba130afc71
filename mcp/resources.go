package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
)

// ErrResourceNotFound reports a resources/read of a URI the server does not
// have. The server's answer is in the error too, as an [*RPCError]: -32002
// up to 2025-11-25, -32602 (invalid params) on 2026-07-28 — and on older
// revisions too when its data names the URI, as go-sdk servers answer.
var ErrResourceNotFound = errors.New("mcp: resource not found")

// ErrResourceTooLarge reports a resources/read whose contents exceed
// [ClientOptions].MaxResourceSize.
var ErrResourceTooLarge = errors.New("mcp: resource too large")

// codeResourceNotFound is the handshake-era error code for an unknown
// resource; 2026-07-28 servers use CodeInvalidParams instead (clients
// should still accept it).
const codeResourceNotFound = -32002

// Resource is a resource a server offers (resources/list).
type Resource struct {
	URI         string          `json:"uri"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	MIMEType    string          `json:"mimeType,omitempty"`
	Size        int64           `json:"size,omitempty"` // zero when unknown
	Annotations json.RawMessage `json:"annotations,omitempty"`
	Meta        json.RawMessage `json:"_meta,omitempty"`
}

// ResourceTemplate describes a family of resources by an RFC 6570 URI
// template (resources/templates/list).
type ResourceTemplate struct {
	URITemplate string          `json:"uriTemplate"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	MIMEType    string          `json:"mimeType,omitempty"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	Meta        json.RawMessage `json:"_meta,omitempty"`
}

// ResourceContents is one part of a read resource: Text for a text
// resource, Blob (decoded from the wire's base64) for a binary one.
type ResourceContents struct {
	URI      string          `json:"uri"`
	MIMEType string          `json:"mimeType,omitempty"`
	Text     string          `json:"text,omitempty"`
	Blob     []byte          `json:"blob,omitempty"`
	Meta     json.RawMessage `json:"_meta,omitempty"`
}

// ReadResourceResult is the outcome of resources/read.
type ReadResourceResult struct {
	Contents []ResourceContents `json:"contents"`
	Meta     json.RawMessage    `json:"_meta,omitempty"`
}

// ListResources returns the server's resources as an iterator that follows
// pagination, one request per page as the caller ranges, up to
// ClientOptions.MaxPages pages. An error (of the request that fetches a page,
// with the same cancellation and timeout semantics as [Client.CallTool]) is
// yielded once and ends the listing. opts applies to each page's request.
func (c *Client) ListResources(ctx context.Context, opts *CallOptions) iter.Seq2[Resource, error] {
	return pages[Resource](c, ctx, "resources/list", "resources", opts)
}

// ResourceTemplates returns the server's resource templates as an iterator,
// paginated as [Client.ListResources] is.
func (c *Client) ResourceTemplates(ctx context.Context, opts *CallOptions) iter.Seq2[ResourceTemplate, error] {
	return pages[ResourceTemplate](c, ctx, "resources/templates/list", "resourceTemplates", opts)
}

// ReadResource reads the resource uri. It is stopped as [Client.CallTool]
// is: an interrupted read is abandoned on the wire and its late reply
// dropped. An unknown resource is an error matching [ErrResourceNotFound]
// (and the server's [*RPCError]); contents larger in total than
// [ClientOptions].MaxResourceSize are an error matching
// [ErrResourceTooLarge].
func (c *Client) ReadResource(ctx context.Context, uri string, opts *CallOptions) (*ReadResourceResult, error) {
	var res struct {
		resultKind
		ReadResourceResult
	}
	err := c.request(ctx, "resources/read", &readResourceParams{URI: uri}, opts, false, &res)
	if err != nil {
		var rpc *RPCError
		if errors.As(err, &rpc) && (rpc.Code == codeResourceNotFound || rpc.Code == CodeInvalidParams && (c.rev.mrtr || namesURI(rpc.Data, uri))) {
			return nil, fmt.Errorf("%w: %s: %w", ErrResourceNotFound, uri, err)
		}
		return nil, err
	}
	if max := c.opts.MaxResourceSize; max > 0 {
		total := 0
		for _, part := range res.Contents {
			total += len(part.Text) + len(part.Blob)
		}
		if total > max {
			return nil, fmt.Errorf("%w: %s has %d bytes of contents, more than MaxResourceSize %d", ErrResourceTooLarge, uri, total, max)
		}
	}
	if res.Contents == nil {
		res.Contents = []ResourceContents{}
	}
	return &res.ReadResourceResult, nil
}

// namesURI reports whether an error's data is {"uri": uri}: how a server
// that already sends 2026-07-28's invalid-params code for an unknown
// resource on older revisions (go-sdk since v1.7.0) says which resource it
// could not find. A bare invalid-params error stays what it is.
func namesURI(data json.RawMessage, uri string) bool {
	var d struct {
		URI string `json:"uri"`
	}
	return json.Unmarshal(data, &d) == nil && d.URI == uri
}

type readResourceParams struct {
	paramsBase
	URI string `json:"uri"`
}

// Subscribe asks the server to tell the client when the resource uri
// changes; each change reaches [ClientOptions].OnResourceUpdated. It exists
// in handshake-era revisions; on 2026-07-28 (where subscriptions go through
// subscriptions/listen: see [Client.Listen] and
// SubscriptionFilter.ResourceSubscriptions) it returns an error matching
// [errors.ErrUnsupported] without sending anything.
func (c *Client) Subscribe(ctx context.Context, uri string, opts *CallOptions) error {
	return c.subscription(ctx, "resources/subscribe", uri, opts)
}

// Unsubscribe ends a [Client.Subscribe].
func (c *Client) Unsubscribe(ctx context.Context, uri string, opts *CallOptions) error {
	return c.subscription(ctx, "resources/unsubscribe", uri, opts)
}

func (c *Client) subscription(ctx context.Context, method, uri string, opts *CallOptions) error {
	if c.rev.metaEnvelope {
		return fmt.Errorf("mcp: %s is not part of revision %s: %w", method, c.rev.name, errors.ErrUnsupported)
	}
	return c.request(ctx, method, &readResourceParams{URI: uri}, opts, false, &resultKind{})
}
