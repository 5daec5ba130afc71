package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// validateAnswer checks content, an operator's answer, against schema, a
// server's requested schema. The schema is untrusted: it is compiled with
// a loader that loads nothing, so a $ref can reach no file and no URL.
// Errors name the fields and the keywords that failed, never a value.
func validateAnswer(schema, content json.RawMessage) error {
	if len(bytes.TrimSpace(content)) == 0 || firstByte(content) != '{' {
		return fmt.Errorf("%w: the answer must be a JSON object", ErrInvalidAnswer)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(content))
	if err != nil {
		return fmt.Errorf("%w: the answer is not JSON", ErrInvalidAnswer)
	}
	if len(bytes.TrimSpace(schema)) == 0 {
		return nil // a question without a schema accepts any object
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return fmt.Errorf("%w: the server's requested schema is not JSON", ErrInvalidAnswer)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{}) // no file, no URL
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	const loc = "urn:andon:elicitation-schema"
	if err := c.AddResource(loc, doc); err != nil {
		return fmt.Errorf("%w: the server's requested schema is unusable: %w", ErrInvalidAnswer, err)
	}
	sch, err := c.Compile(loc)
	if err != nil {
		return fmt.Errorf("%w: the server's requested schema does not compile", ErrInvalidAnswer)
	}
	var verr *jsonschema.ValidationError
	if err := sch.Validate(inst); errors.As(err, &verr) {
		return fmt.Errorf("%w: %s", ErrInvalidAnswer, strings.Join(failures(verr), "; "))
	} else if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidAnswer, err)
	}
	return nil
}

// failures describes the leaves of a validation error as "FIELD: KEYWORD"
// — the field (its JSON pointer, "/" for the whole answer) and the keyword
// that failed — without the values, which may be secrets.
func failures(e *jsonschema.ValidationError) []string {
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		field := "/" + strings.Join(e.InstanceLocation, "/")
		keyword := "invalid"
		if e.ErrorKind != nil {
			if kp := e.ErrorKind.KeywordPath(); len(kp) > 0 {
				keyword = kp[len(kp)-1]
			}
		}
		out = append(out, fmt.Sprintf("field %s fails %q", field, keyword))
	}
	walk(e)
	slices.Sort(out)
	return slices.Compact(out)
}

// answerFields returns the names of the top-level fields of an answer, in
// order: what an audit row and a step say of it, instead of its values.
func answerFields(content json.RawMessage) []string {
	var m map[string]json.RawMessage
	if json.Unmarshal(content, &m) != nil {
		return nil
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

func firstByte(b []byte) byte {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return 0
	}
	return b[0]
}
