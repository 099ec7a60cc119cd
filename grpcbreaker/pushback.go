package grpcbreaker

// PushbackTrailer is the trailer key by which a server tells the client how
// long to wait before a retry, in milliseconds (gRFC A6): a negative value,
// or one that is not an integer, says "don't retry". The client
// interceptors turn an error with such a trailer into one that
// [retry.Policy.Do] honours (see [retry.Pushback]); gRPC's own retries read
// it too.
const PushbackTrailer = "grpc-retry-pushback-ms"
