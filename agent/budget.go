package agent

import "fmt"

// callBudgetError ends a run whose model asked for more tool calls than a
// budget allows ([Config].MaxCallsPerTurn, [Config].MaxCallsPerRun). Its
// text is the run's error: fixed words and numbers, never the model's.
type callBudgetError struct {
	reason Reason
	asked  int // calls asked for: in the turn, or in the run so far
	limit  int
}

func (e *callBudgetError) Error() string {
	if e.reason == ReasonMaxCallsPerTurn {
		return fmt.Sprintf("a model turn asked for %d tool calls, more than max_calls_per_turn (%d); none of them was made", e.asked, e.limit)
	}
	return fmt.Sprintf("the run's model asked for %d tool calls, more than max_calls_per_run (%d); the run made no further call", e.asked, e.limit)
}

// withinCallBudgets reports whether the last model turn keeps the run
// within its call budgets. Nothing of a turn that does not is called: a
// bound is checked before the first call it covers, never after a part of
// the turn went out.
func (s *segment) withinCallBudgets() error {
	cfg := &s.rt.cfg
	switch {
	case s.tr.turnSize > cfg.MaxCallsPerTurn:
		return &callBudgetError{reason: ReasonMaxCallsPerTurn, asked: s.tr.turnSize, limit: cfg.MaxCallsPerTurn}
	case s.tr.asked > cfg.MaxCallsPerRun:
		return &callBudgetError{reason: ReasonMaxCallsPerRun, asked: s.tr.asked, limit: cfg.MaxCallsPerRun}
	}
	return nil
}
