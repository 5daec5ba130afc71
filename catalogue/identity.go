package catalogue

import (
	"encoding/json"

	"github.com/andonhq/andon/agent"
)

// identityDoc is what a tool's identity digests: everything that decides
// which program or endpoint a call reaches and as whom andon speaks to it,
// and the tool's input schema as its server describes it. The operator's
// policies (approval, effects, budgets, enabled) are not in it: changing
// them does not change what a call does.
type identityDoc struct {
	Server            string            `json:"server"`
	Command           []string          `json:"command,omitempty"`
	Env               map[string]string `json:"env,omitempty"`
	URL               string            `json:"url,omitempty"`
	Headers           map[string]string `json:"headers,omitempty"`
	Protocol          string            `json:"protocol,omitempty"`
	Credential        string            `json:"credential,omitempty"`
	Auth              string            `json:"auth,omitempty"`
	ClientID          string            `json:"client_id,omitempty"`
	Scopes            []string          `json:"scopes,omitempty"`
	ClientCredentials string            `json:"client_credentials,omitempty"`
	Tool              string            `json:"tool"`
	InputSchema       json.RawMessage   `json:"input_schema,omitempty"`
}

// identity returns the identity of the tool called remote on server s with
// the given input schema: "sha256:" and the hex digest of identityDoc's
// canonical JSON (agent.ArgsDigest's form). Header and environment values
// are digested, never stored: the digest says that they changed, not what
// they are.
func identity(s *Server, remote string, schema json.RawMessage) string {
	doc := identityDoc{Server: s.Name, Command: s.Command, Env: s.Env, URL: s.URL, Headers: s.Headers, Protocol: s.Protocol,
		Credential: s.Credential, Auth: s.Auth, ClientID: s.ClientID, Scopes: s.Scopes, ClientCredentials: s.ClientCredentials,
		Tool: remote, InputSchema: schema}
	raw, err := json.Marshal(doc)
	if err != nil { // a schema that is not JSON: digest it as it is
		doc.InputSchema = nil
		raw, _ = json.Marshal(doc)
		raw = append(raw, schema...)
	}
	return agent.ArgsDigest(raw)
}

// Identity is a digest of what a call of the tool reaches: its server's
// definition in andon.yaml (command and environment, or URL and headers;
// the pinned protocol; its credential, OAuth client and scopes) and the
// input schema the server gave the tool. An approval names it, so that a
// call approved on one server is not made on another that took its name
// (see [agent.IdentifiedTool]). It makes Tool an agent.IdentifiedTool.
func (t *Tool) Identity() string { return t.identity }
