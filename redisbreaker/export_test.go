package redisbreaker

// WaitExchanges waits for the exchanges with Redis that rounds (or
// overrides) gave up waiting for to end in go-redis, by its own timeouts:
// after it, no shard is busy with a round before, and the next round
// sends its commands. Callers run no round meanwhile.
func (s *Sharer) WaitExchanges() { s.pending.Wait() }
