package httpbreaker

// RetryHeader is the response header by which a server says whether the
// client may retry. A failed response (a 5xx, or a 429 Too Many Requests)
// whose RetryHeader is "no" ([RetryNo]) says "overloaded; don't retry":
// [ResponseError] then returns an error that [retry.Policy.Do] never
// retries, nor does [CheckRetry], whatever Retry-After says. Otherwise a
// Retry-After header on a 429 or 503 says how long to wait before the next
// attempt.
const RetryHeader = "Srebreaker-Retry"
