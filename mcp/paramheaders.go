package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Custom headers from tool parameters (2026-07-28, SEP-2243): a tool's
// inputSchema may mark a property with "x-mcp-header": "Name", and a call
// of that tool over Streamable HTTP then carries the argument's value as
// Mcp-Param-Name, so intermediaries can route on it without parsing bodies.
// A tool whose annotations break the rules is dropped from ListTools.

// paramHeader is one annotated property: where its value sits in the
// arguments, and the header it goes to.
type paramHeader struct {
	path []string
	name string
}

// scanParamHeaders returns the annotations of a tool's input schema, or an
// error naming the first rule an annotation breaks: it must sit on a
// property reached through "properties" keys only, name an HTTP token
// unique (case-insensitively) within the tool, and declare a string,
// integer or boolean property (the spec excludes number).
func scanParamHeaders(schema json.RawMessage) ([]paramHeader, error) {
	if len(schema) == 0 || !bytes.Contains(schema, []byte("x-mcp-header")) {
		return nil, nil
	}
	var root any
	if err := json.Unmarshal(schema, &root); err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	var found []paramHeader
	seen := map[string]bool{}
	var walk func(node any, path []string, reachable bool) error
	walk = func(node any, path []string, reachable bool) error {
		switch n := node.(type) {
		case []any:
			for _, v := range n {
				if err := walk(v, path, false); err != nil {
					return err
				}
			}
		case map[string]any:
			if raw, ok := n["x-mcp-header"]; ok {
				name, _ := raw.(string)
				switch {
				case !reachable || len(path) == 0:
					return errors.New("x-mcp-header outside a property reached through properties")
				case !isToken(name):
					return fmt.Errorf("x-mcp-header %q is not an HTTP token", name)
				case seen[strings.ToLower(name)]:
					return fmt.Errorf("x-mcp-header %q is declared twice", name)
				}
				switch n["type"] {
				case "string", "integer", "boolean":
				default:
					return fmt.Errorf("x-mcp-header %q is on a property of type %v", name, n["type"])
				}
				seen[strings.ToLower(name)] = true
				found = append(found, paramHeader{path: append([]string(nil), path...), name: name})
			}
			for key, v := range n {
				if key == "properties" {
					props, ok := v.(map[string]any)
					if !ok {
						continue
					}
					for prop, child := range props {
						if err := walk(child, append(path, prop), reachable); err != nil {
							return err
						}
					}
					continue
				}
				if err := walk(v, path, false); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(root, nil, true); err != nil {
		return nil, err
	}
	return found, nil
}

// isToken reports whether s is an RFC 9110 token.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// paramHeaderValues returns the Mcp-Param-* headers for a call's
// arguments. Absent and null arguments send no header.
func paramHeaderValues(decls []paramHeader, args json.RawMessage) http.Header {
	if len(decls) == 0 || len(args) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		return nil
	}
	h := http.Header{}
	for _, d := range decls {
		v := root
		for _, key := range d.path {
			obj, ok := v.(map[string]any)
			if !ok {
				v = nil
				break
			}
			v = obj[key]
		}
		var text string
		switch x := v.(type) {
		case string:
			text = headerValue(x)
		case json.Number:
			text = x.String()
		case bool:
			text = strconv.FormatBool(x)
		default:
			continue // absent, null, or not a scalar
		}
		h.Set("Mcp-Param-"+d.name, text)
	}
	return h
}

type callRoutingKey struct{}

// callRouting is what a tools/call carries in Streamable HTTP headers
// (2026-07-28) that the transport would otherwise decode the request's
// params again to find: the tool's name for Mcp-Name, and the call's
// Mcp-Param-* headers.
type callRouting struct {
	name   string
	params http.Header
}

// headerRouted is a conn whose requests carry the routing headers (HTTP):
// only for one is a call's routing worth working out and putting in its
// context.
type headerRouted interface{ headerRouted() }

// withCallRouting carries a tools/call's routing to the HTTP transport.
func withCallRouting(ctx context.Context, name string, params http.Header) context.Context {
	return context.WithValue(ctx, callRoutingKey{}, &callRouting{name: name, params: params})
}

// callRoutingFrom returns the routing withCallRouting put in ctx, or nil.
func callRoutingFrom(ctx context.Context) *callRouting {
	r, _ := ctx.Value(callRoutingKey{}).(*callRouting)
	return r
}
