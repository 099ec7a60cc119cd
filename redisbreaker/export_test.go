package redisbreaker

// ExchangeSourceV3 is layout v3's script, for tests that run a process of
// a release before layout v4.
const ExchangeSourceV3 = exchangeSource
