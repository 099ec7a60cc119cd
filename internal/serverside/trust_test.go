package serverside

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/srebreaker/srebreaker/criticality"
)

// claim is a test's incoming call: the level it claims, as a string.
type claim string

func claimedOf(c claim) criticality.Level { return Claimed(string(c)) }

func TestPolicy_Level(t *testing.T) {
	byName := func(c claim) criticality.Level {
		if c == "admin" {
			return criticality.CriticalPlus
		}
		return criticality.Level(99) // not a level
	}
	for _, tc := range []struct {
		name   string
		policy Policy[claim]
		claim  claim
		want   criticality.Level
	}{
		{name: "ignored", claim: "CRITICAL_PLUS", want: criticality.Default},
		{name: "trusted", policy: Trust[claim](criticality.CriticalPlus), claim: "SHEDDABLE", want: criticality.Sheddable},
		{name: "trusted, capped", policy: Trust[claim](criticality.Critical), claim: "CRITICAL_PLUS", want: criticality.Critical},
		{name: "trusted, none claimed", policy: Trust[claim](criticality.CriticalPlus), want: criticality.Default},
		{name: "trusted, none claimed, capped", policy: Trust[claim](criticality.Sheddable), want: criticality.Sheddable},
		{name: "trusted, not a level", policy: Trust[claim](criticality.CriticalPlus), claim: "URGENT", want: criticality.Default},
		{name: "trusted, invalid max", policy: Trust[claim](criticality.Level(9)), claim: "SHEDDABLE", want: criticality.Default},
		{name: "decided", policy: Decided(byName), claim: "admin", want: criticality.CriticalPlus},
		{name: "decided, not a level", policy: Decided(byName), claim: "guest", want: criticality.Default},
		{name: "decided, nil", policy: Decided[claim](nil), claim: "admin", want: criticality.Default},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.policy.Level(tc.claim, claimedOf))
		})
	}
}

func TestPolicy_StringAndInvalid(t *testing.T) {
	f := func(claim) criticality.Level { return criticality.Critical }
	for _, tc := range []struct {
		policy  Policy[claim]
		text    string
		invalid bool
	}{
		{Policy[claim]{}, "IgnoreClaim()", false},
		{Trust[claim](criticality.Critical), "TrustClaim(criticality.Critical)", false},
		{Trust[claim](criticality.CriticalPlus), "TrustClaim(criticality.CriticalPlus)", false},
		{Trust[claim](criticality.Level(9)), "TrustClaim(criticality." + criticality.Level(9).String() + ")", true},
		{Decided(f), "LevelFunc(f)", false},
		{Decided[claim](nil), "LevelFunc(nil)", true},
	} {
		assert.Equal(t, tc.text, tc.policy.String("TrustClaim", "IgnoreClaim"))
		assert.Equal(t, tc.invalid, tc.policy.Invalid() != "", tc.text)
	}
}

func TestPolicy_Check(t *testing.T) {
	const client = "a server, not to a client"
	assert.Empty(t, Policy[claim]{}.Check(ServerSide, true, "IgnoreClaim()", client))
	assert.Empty(t, Policy[claim]{}.Check(ClientSide, false, "IgnoreClaim()", client), "not given")
	assert.Equal(t, "WithCriticalityPolicy applies to a server, not to a client",
		Trust[claim](criticality.Critical).Check(ClientSide, true, "TrustClaim(criticality.Critical)", client))
	assert.Equal(t, "WithCriticalityPolicy(LevelFunc(nil)): function must not be nil",
		Decided[claim](nil).Check(ServerSide, true, "LevelFunc(nil)", client))
}
