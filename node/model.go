package node

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/egress"
	"github.com/andonhq/andon/model"
	"github.com/andonhq/andon/model/openai"
	"github.com/andonhq/andon/model/script"
	"github.com/andonhq/andon/vault"
)

// OpenAI configures the model "openai": an OpenAI-compatible
// chat-completions API, reached through egress.
type OpenAI struct {
	// BaseURL is the API's URL (https://api.openai.com/v1,
	// http://127.0.0.1:11434/v1 for Ollama, …). Required.
	BaseURL string
	// Model is the name of the model that "openai" asks for; a run may
	// name another with "openai:NAME".
	Model string
	// Credential names the vault secret holding the API key; it must be
	// allowed to go to BaseURL's host. Empty: a server that needs no key.
	Credential string
}

// scriptModel returns the script model (model/script), the one every run
// can have: for the model "" or "script".
func scriptModel(_ context.Context, req *agent.Request) (model.Model, error) {
	switch req.Model {
	case "", "script":
		s, err := script.Parse(req.Script)
		if err != nil {
			return nil, err
		}
		return script.New(s)
	default:
		return nil, fmt.Errorf("unknown model %q", req.Model)
	}
}

// models chooses a run's model: "openai" or "openai:NAME" for the
// OpenAI-compatible one, if configured; anything else from base.
type models struct {
	base   func(ctx context.Context, req *agent.Request) (model.Model, error)
	openai *openai.Config // nil: not configured
}

// newModels builds the egress client that the openai model
// sends through: its key comes from the vault on the way out, and every
// request leaves an audit row. ecfg is the egress every client shares.
func newModels(ctx context.Context, base func(context.Context, *agent.Request) (model.Model, error), o *OpenAI, ecfg egress.Config, secrets *vault.Vault) (*models, error) {
	ms := &models{base: base}
	if o == nil {
		return ms, nil
	}
	u, _ := url.Parse(o.BaseURL) // Config.check parsed it
	cfg := ecfg
	cfg.Purpose = "model openai"
	cfg.AllowedHosts = append(slices.Clone(ecfg.AllowedHosts), u.Hostname()) // the operator named it
	cfg.Credential, cfg.Secrets = "", nil
	if o.Credential != "" { // a secret's hosts are known only now
		info, err := secrets.Info(ctx, o.Credential)
		if err != nil {
			return nil, fmt.Errorf("OpenAI.Credential: %w", err)
		}
		if host := vault.NormalizeHost(u.Hostname()); !slices.Contains(info.Hosts, host) {
			return nil, fmt.Errorf("OpenAI.Credential: secret %q may not be sent to %s (its hosts: %s)", o.Credential, host, strings.Join(info.Hosts, ", "))
		}
		cfg.Credential, cfg.Secrets = o.Credential, secrets
	}
	client, err := egress.NewClient(ctx, &cfg)
	if err != nil {
		return nil, fmt.Errorf("the openai model: %w", err)
	}
	ms.openai = &openai.Config{BaseURL: o.BaseURL, Model: o.Model, HTTPClient: client}
	return ms, nil
}

func (ms *models) newModel(ctx context.Context, req *agent.Request) (model.Model, error) {
	kind, name, _ := strings.Cut(req.Model, ":")
	if kind != "openai" {
		return ms.base(ctx, req)
	}
	if ms.openai == nil {
		return nil, errors.New(`model "openai" is not available: the node has no OpenAI config (andon serve: --openai-base-url)`)
	}
	cfg := *ms.openai
	if name != "" {
		cfg.Model = name
	}
	if cfg.Model == "" {
		return nil, errors.New(`model "openai" has no model name: configure one (andon serve: --openai-model), or ask for "openai:NAME"`)
	}
	m, err := openai.New(cfg)
	if err != nil {
		return nil, err
	}
	return runTagged{m}, nil
}

// runTagged makes the egress audit rows of a model's requests name the run
// they are made for (the executor puts the run in ctx; model packages
// cannot read it, as agent imports them).
type runTagged struct{ model.Model }

func (m runTagged) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	if id := agent.RunIDFrom(ctx); id != "" {
		ctx = egress.WithRun(ctx, id)
	}
	return m.Model.Complete(ctx, req)
}

// check refuses a config that openai.New would refuse, before anything is
// built on it.
func (o *OpenAI) check() error {
	if _, err := openai.New(openai.Config{BaseURL: o.BaseURL, Model: "check"}); err != nil {
		return fmt.Errorf("%w: OpenAI.BaseURL: %w", ErrInvalidConfig, err)
	}
	return nil
}
