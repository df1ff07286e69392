package emulator

import (
	"container/list"
	"hash/fnv"
	"sync"
)

// PrefixBlockTokens is the prefix cache's block size in tokens (vLLM's
// default): a prompt is cached and matched in blocks of
// PrefixBlockTokens × 4 bytes of its text, the emulator's token estimate.
const PrefixBlockTokens = 16

// maxPrefixCacheTokens bounds Profile.PrefixCacheTokens.
const maxPrefixCacheTokens = 1 << 30

// prefixCache models an endpoint's prefix (KV) cache, as vLLM's automatic
// prefix caching keeps it: a prompt's text is cut into whole blocks of
// PrefixBlockTokens tokens, each named by the hash of the prompt up to
// its end, so that two prompts share a block only when they share all of
// the text before it too. A request's cached tokens are its leading
// blocks found in the cache (a partial last block is never cached); its
// blocks are then in the cache, the least recently used evicted beyond
// the capacity.
type prefixCache struct {
	mu     sync.Mutex
	blocks int // capacity
	lru    *list.List
	index  map[uint64]*list.Element
}

func newPrefixCache(tokens int) *prefixCache {
	return &prefixCache{blocks: max(tokens/PrefixBlockTokens, 1), lru: list.New(), index: map[uint64]*list.Element{}}
}

// lookup returns how many of prompt's leading tokens were cached, and
// caches its blocks.
func (pc *prefixCache) lookup(prompt string) int {
	const size = PrefixBlockTokens * 4
	n := len(prompt) / size
	if n == 0 {
		return 0
	}
	keys := make([]uint64, n)
	h := fnv.New64a()
	for i := range n {
		_, _ = h.Write([]byte(prompt[i*size : (i+1)*size]))
		keys[i] = h.Sum64()
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	hit := 0
	for hit < n {
		if _, ok := pc.index[keys[hit]]; !ok {
			break
		}
		hit++
	}
	for _, k := range keys {
		if e, ok := pc.index[k]; ok {
			pc.lru.MoveToFront(e)
			continue
		}
		pc.index[k] = pc.lru.PushFront(k)
		for pc.lru.Len() > pc.blocks {
			old := pc.lru.Back()
			pc.lru.Remove(old)
			delete(pc.index, old.Value.(uint64))
		}
	}
	return hit * PrefixBlockTokens
}
