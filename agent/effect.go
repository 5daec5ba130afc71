package agent

// Effect classifies what a tool call does to the world, which decides
// whether it is fenced and whether a run interrupted during it may be
// retried.
type Effect string

// Tool effects.
const (
	// EffectReadOnly changes nothing: never fenced, always safe to retry.
	EffectReadOnly Effect = "read_only"
	// EffectIdempotentWrite changes the world, but doing it twice is the
	// same as once: fenced, safe to retry.
	EffectIdempotentWrite Effect = "idempotent_write"
	// EffectNonIdempotentWrite changes the world, and doing it twice is
	// not the same as once: fenced, and a run found mid-call is never
	// retried. Imported MCP tools are this unless an operator says
	// otherwise.
	EffectNonIdempotentWrite Effect = "non_idempotent_write"
)

// IsWrite reports whether e changes the world (and so is fenced).
func (e Effect) IsWrite() bool {
	return e == EffectIdempotentWrite || e == EffectNonIdempotentWrite
}

// MayRetry reports whether a run whose write fence reads pendingEffect may
// be retried: false only for a non-idempotent write, which may already have
// happened. Every retry, requeue, reaper and recovery path asks it, and
// dead-letters the run instead when it says no. An empty or unknown fence
// allows a retry: it is not a write in flight.
func MayRetry(pendingEffect Effect) bool {
	return pendingEffect != EffectNonIdempotentWrite
}
