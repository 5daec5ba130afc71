package script

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"go.yaml.in/yaml/v3"
)

// yamlToJSON turns one YAML document into JSON, so that a script has one
// decoder and one set of rules whatever it was written in. Scalars keep
// their meaning: a date stays the string it was written as, an integer
// stays an integer. Anchors and aliases, merge keys, custom tags, non-scalar
// keys and duplicate keys are refused, with the line they are on.
func yamlToJSON(data []byte) ([]byte, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the script is empty")
		}
		return nil, err
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		return nil, fmt.Errorf("line %d: a script is one YAML document, not several", extra.Line)
	case !errors.Is(err, io.EOF):
		return nil, err
	}
	var b bytes.Buffer
	if err := writeJSON(&b, &doc); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func writeJSON(b *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			b.WriteString("null")
			return nil
		}
		return writeJSON(b, n.Content[0])
	case yaml.AliasNode:
		return fmt.Errorf("line %d: YAML aliases are not supported in a script", n.Line)
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSON(b, c); err != nil {
				return err
			}
		}
		b.WriteByte(']')
		return nil
	case yaml.MappingNode:
		b.WriteByte('{')
		seen := make(map[string]bool, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: a key must be a plain value", k.Line)
			}
			if k.ShortTag() == "!!merge" {
				return fmt.Errorf("line %d: YAML merge keys are not supported in a script", k.Line)
			}
			if seen[k.Value] {
				return fmt.Errorf("line %d: key %q appears twice", k.Line, k.Value)
			}
			seen[k.Value] = true
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k.Value)
			b.WriteByte(':')
			if err := writeJSON(b, v); err != nil {
				return err
			}
		}
		b.WriteByte('}')
		return nil
	case yaml.ScalarNode:
		return writeScalar(b, n)
	}
	return fmt.Errorf("line %d: unexpected YAML node", n.Line)
}

func writeScalar(b *bytes.Buffer, n *yaml.Node) error {
	switch n.ShortTag() {
	case "!!str", "!!timestamp", "!!binary":
		writeString(b, n.Value)
	case "!!null":
		b.WriteString("null")
	case "!!bool":
		var v bool
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		fmt.Fprint(b, v)
	case "!!int":
		var i int64
		if err := n.Decode(&i); err == nil {
			fmt.Fprint(b, i)
			return nil
		}
		var u uint64
		if err := n.Decode(&u); err != nil {
			return fmt.Errorf("line %d: integer %s is out of range", n.Line, n.Value)
		}
		fmt.Fprint(b, u)
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return fmt.Errorf("line %d: %s has no JSON form", n.Line, n.Value)
		}
		j, _ := json.Marshal(f)
		b.Write(j)
	default:
		return fmt.Errorf("line %d: YAML tag %s is not supported in a script", n.Line, n.Tag)
	}
	return nil
}

func writeString(b *bytes.Buffer, s string) {
	j, _ := json.Marshal(s) // a Go string always encodes
	b.Write(j)
}
