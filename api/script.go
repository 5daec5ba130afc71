package api

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/model/script"
)

// scriptFromText lets a run request carry its script as a script file's
// text (JSON or YAML) in a JSON string, as the console sends what the
// operator picked: the text is parsed and replaced by the script itself,
// as `andon run --script FILE` does on the client. Any other script is
// left to the model.
func scriptFromText(req *agent.Request) error {
	var text string
	if len(req.Script) == 0 || req.Script[0] != '"' || json.Unmarshal(req.Script, &text) != nil {
		return nil
	}
	s, err := script.Parse([]byte(text))
	if err != nil {
		return errScriptText(err)
	}
	data, err := json.Marshal(s)
	if err != nil {
		return errScriptText(err)
	}
	req.Script = data
	return nil
}

// errScriptText says what is wrong with a script's text, in the client's
// terms: the step and the field, without the package's prefix.
func errScriptText(err error) error {
	return errors.New("the script is not valid: " + strings.TrimPrefix(err.Error(), "script: "))
}
