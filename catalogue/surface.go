package catalogue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/andonhq/andon/mcp"
)

// ServerResource is a resource one of the catalogue's servers offers.
type ServerResource struct {
	// Server is the server's name in the config.
	Server string
	mcp.Resource
}

// ServerPrompt is a prompt one of the catalogue's servers offers, under
// its local name (mcp_<server>_<prompt>, as tools are named).
type ServerPrompt struct {
	// Server is the server's name in the config; Remote the prompt's name
	// on it.
	Server, Remote string
	// Prompt is the prompt as the server describes it, Name its local
	// name.
	mcp.Prompt
}

// ErrUnknownPrompt: no server of the catalogue offers a prompt of that
// local name.
var ErrUnknownPrompt = errors.New("catalogue: no such prompt")

// capable reports whether a server declared capability (resources,
// prompts) when it connected.
func capable(c *mcp.Client, capability string) bool {
	var caps map[string]json.RawMessage
	_ = json.Unmarshal(c.Server().Capabilities, &caps)
	_, ok := caps[capability]
	return ok
}

// surface runs f on the connection of every enabled server (that only
// admits, if set) that declares capability, each under the server's import budget. A server that cannot
// be reached, or whose f fails, is left out and logged: one server's
// trouble does not hide the others'.
func (c *Catalogue) surface(ctx context.Context, capability string, only func(*server) bool, f func(ctx context.Context, s *server, cl *mcp.Client) error) error {
	if c.closed.Load() {
		return ErrClosed
	}
	for _, s := range c.servers {
		if !s.cfg.IsEnabled() || only != nil && !only(s) {
			continue
		}
		b := s.cfg.importBudget()
		bctx, cancel := withBudget(ctx, b, s.cfg.Name, "")
		cn, err := s.client(bctx, b, "")
		if err == nil && capable(cn.client, capability) {
			err = f(bctx, s, cn.client)
		}
		cancel()
		if ctx.Err() != nil {
			return fmt.Errorf("catalogue: listing %s: %w", capability, context.Cause(ctx))
		}
		if err != nil {
			s.logger.Warn("catalogue: a server's "+capability+" are left out", "error", err)
		}
	}
	return nil
}

// Resources lists the resources of every enabled server that offers
// resources, in the order of the config. A server that fails is left out
// (and logged).
func (c *Catalogue) Resources(ctx context.Context) ([]ServerResource, error) {
	var out []ServerResource
	err := c.surface(ctx, "resources", nil, func(ctx context.Context, s *server, cl *mcp.Client) error {
		for r, err := range cl.ListResources(ctx, nil) {
			if err != nil {
				return err
			}
			out = append(out, ServerResource{Server: s.cfg.Name, Resource: r})
		}
		return nil
	})
	return out, err
}

// ReadResource reads uri from the named server, under its budget.
func (c *Catalogue) ReadResource(ctx context.Context, serverName, uri string) (res *mcp.ReadResourceResult, err error) {
	err = c.onServer(ctx, serverName, func(ctx context.Context, cl *mcp.Client) error {
		res, err = cl.ReadResource(ctx, uri, nil)
		return err
	})
	return res, err
}

// onServer runs f on the named server's connection, under its budget.
func (c *Catalogue) onServer(ctx context.Context, serverName string, f func(ctx context.Context, cl *mcp.Client) error) error {
	s, err := c.server(serverName)
	if err != nil {
		return err
	}
	b := s.cfg.importBudget()
	bctx, cancel := withBudget(ctx, b, s.cfg.Name, "")
	defer cancel()
	cn, err := s.client(bctx, b, "")
	if err != nil {
		return err
	}
	return f(bctx, cn.client)
}

// Prompts lists the prompts of every enabled server that offers prompts,
// under their local names.
func (c *Catalogue) Prompts(ctx context.Context) ([]ServerPrompt, error) {
	return c.prompts(ctx, nil)
}

// prompts lists the prompts of the servers only admits (nil: all).
func (c *Catalogue) prompts(ctx context.Context, only func(*server) bool) ([]ServerPrompt, error) {
	var out []ServerPrompt
	err := c.surface(ctx, "prompts", only, func(ctx context.Context, s *server, cl *mcp.Client) error {
		for p, err := range cl.ListPrompts(ctx, nil) {
			if err != nil {
				return err
			}
			sp := ServerPrompt{Server: s.cfg.Name, Remote: p.Name, Prompt: p}
			sp.Name = LocalName(s.cfg.Name, p.Name)
			out = append(out, sp)
		}
		return nil
	})
	return out, err
}

// onPrompt runs f on the connection of the server whose prompt has the
// local name, under its budget. Only the servers the name's prefix
// (mcp_<server>_) may belong to are asked for their prompts. A name no
// server's listing has fails with [ErrUnknownPrompt].
func (c *Catalogue) onPrompt(ctx context.Context, name string, f func(ctx context.Context, p ServerPrompt, cl *mcp.Client) error) error {
	prompts, err := c.prompts(ctx, func(s *server) bool { return strings.HasPrefix(name, LocalName(s.cfg.Name, "")) })
	if err != nil {
		return err
	}
	for _, p := range prompts {
		if p.Name == name {
			return c.onServer(ctx, p.Server, func(ctx context.Context, cl *mcp.Client) error { return f(ctx, p, cl) })
		}
	}
	return fmt.Errorf("%w: %q", ErrUnknownPrompt, name)
}

// GetPrompt renders the prompt of local name with args, on its server.
// A name no server's listing has fails with [ErrUnknownPrompt].
func (c *Catalogue) GetPrompt(ctx context.Context, name string, args map[string]string) (res *mcp.GetPromptResult, err error) {
	err = c.onPrompt(ctx, name, func(ctx context.Context, p ServerPrompt, cl *mcp.Client) error {
		res, err = cl.GetPrompt(ctx, p.Remote, args, nil)
		return err
	})
	return res, err
}

// CompletePrompt completes an argument of the prompt of local name, on its
// server (nothing to suggest if the server has no completions). A name no
// server's listing has fails with [ErrUnknownPrompt].
func (c *Catalogue) CompletePrompt(ctx context.Context, name string, req mcp.CompleteRequest) (res *mcp.Completion, err error) {
	err = c.onPrompt(ctx, name, func(ctx context.Context, p ServerPrompt, cl *mcp.Client) error {
		if !capable(cl, "completions") {
			res = &mcp.Completion{}
			return nil
		}
		req.Ref = mcp.PromptRef(p.Remote)
		res, err = cl.Complete(ctx, req, nil)
		return err
	})
	return res, err
}
