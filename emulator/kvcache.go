package emulator

import (
	"slices"
	"sync"
	"time"
)

// DefaultKVCacheTokens is an endpoint's KV-cache capacity when its profile
// sets none: 8,192 blocks of PrefixBlockTokens tokens (about what an 80 GB
// GPU holds for an 8B model with grouped-query attention).
const DefaultKVCacheTokens = 8192 * PrefixBlockTokens

// kvCache models the KV cache of an endpoint's running requests, as vLLM's
// block manager fills it: a request holds ⌈(prompt + generated) / block⌉
// blocks of PrefixBlockTokens tokens from admission (a slot taken: its
// prompt's blocks, allocated for its prefill) until it ends, one more
// block each time its generated tokens fill the last. Its generated
// tokens at time t are those of its token schedule due by t, written or
// not (a non-streamed answer is generated on the same schedule). The
// usage is the blocks held over the capacity's, at most 1.
//
// It is a model, not vLLM: prompt blocks shared through the prefix cache
// are counted once per request holding them, and the emulator neither
// preempts nor refuses a request when the cache is full (its Slots bound
// what runs), so a full cache reads 1 while its requests go on.
type kvCache struct {
	mu       sync.Mutex
	capacity int // blocks
	running  map[*kvSeq]struct{}
}

// kvSeq is one running request: its prompt and its token schedule (each
// token's due time, in order).
type kvSeq struct {
	prompt  int
	tokenAt []time.Time
}

func newKVCache(tokens int) *kvCache {
	return &kvCache{capacity: max(tokens/PrefixBlockTokens, 1), running: map[*kvSeq]struct{}{}}
}

// add registers a request admitted with its schedule fixed; remove it at
// its end.
func (kv *kvCache) add(prompt int, tokenAt []time.Time) *kvSeq {
	q := &kvSeq{prompt: prompt, tokenAt: tokenAt}
	kv.mu.Lock()
	kv.running[q] = struct{}{}
	kv.mu.Unlock()
	return q
}

func (kv *kvCache) remove(q *kvSeq) {
	if q == nil {
		return
	}
	kv.mu.Lock()
	delete(kv.running, q)
	kv.mu.Unlock()
}

// usage returns the share of the capacity's blocks the running requests
// hold at now, in [0, 1].
func (kv *kvCache) usage(now time.Time) float64 {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	blocks := 0
	for q := range kv.running {
		blocks += q.blocks(now)
	}
	return min(float64(blocks)/float64(kv.capacity), 1)
}

// blocks returns the blocks q holds at now.
func (q *kvSeq) blocks(now time.Time) int {
	generated, _ := slices.BinarySearchFunc(q.tokenAt, now, func(at, now time.Time) int {
		if at.After(now) {
			return 1
		}
		return -1
	})
	return (q.prompt + generated + PrefixBlockTokens - 1) / PrefixBlockTokens
}
