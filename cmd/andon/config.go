package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"go.yaml.in/yaml/v3"

	"github.com/andonhq/andon/catalogue"
)

// fileConfig is andon.yaml: the MCP servers (package catalogue's section)
// and the limits of every run the process executes.
type fileConfig struct {
	catalogue.Config `yaml:",inline"`
	Runs             runLimits `yaml:"runs,omitempty"`
}

// runLimits is andon.yaml's runs section. Zero means the runtime's
// default; a flag of serve or worker, when given, wins.
//
//	runs:
//	  max_rounds: 20          # model turns per run
//	  max_calls_per_turn: 32  # tool calls one model turn may ask for
//	  max_calls_per_run: 256  # tool calls in all
type runLimits struct {
	MaxRounds       int `yaml:"max_rounds,omitempty"`
	MaxCallsPerTurn int `yaml:"max_calls_per_turn,omitempty"`
	MaxCallsPerRun  int `yaml:"max_calls_per_run,omitempty"`
}

// loadConfig reads and validates andon.yaml at path. Unknown keys are
// errors, as in every section.
func loadConfig(path string) (*fileConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var cfg fileConfig
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := errors.Join(cfg.Config.Validate(), cfg.Runs.validate()); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &cfg, nil
}

func (l runLimits) validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    int
	}{{"max_rounds", l.MaxRounds}, {"max_calls_per_turn", l.MaxCallsPerTurn}, {"max_calls_per_run", l.MaxCallsPerRun}} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("runs: %s %d: want 1 or more (or leave it out for the default)", f.name, f.v))
		}
	}
	return errors.Join(errs...)
}

// over returns l with each limit that o sets (above zero) taken from o.
func (l runLimits) over(o runLimits) runLimits {
	pick := func(mine, theirs int) int {
		if theirs > 0 {
			return theirs
		}
		return mine
	}
	return runLimits{pick(l.MaxRounds, o.MaxRounds), pick(l.MaxCallsPerTurn, o.MaxCallsPerTurn), pick(l.MaxCallsPerRun, o.MaxCallsPerRun)}
}

// limitUsage is the usage of a limit's flag.
func limitUsage(what, key string, def int) string {
	return fmt.Sprintf("at most `N` %s; 0: andon.yaml's runs.%s, else %d", what, key, def)
}
