// Package faulttest runs, in its tests, every integration of the
// repository against real servers on loopback behind a toxiproxy proxy
// started in the test process.
package faulttest
