// Package criticality names how much a call matters: the four levels of
// the SRE book's "Handling Overload" (https://sre.google/sre-book/handling-overload/),
// carried in a context. When a breaker sheds, it drops the lowest levels
// first; a level is set where a request enters the system and carried on
// only between services that trust each other (docs/guide/criticality.md).
package criticality
