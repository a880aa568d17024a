package registerapi

import (
	"fmt"
	"strconv"
	"time"
)

// Memory is what the catalog keeps of past states: TombstoneRetention and
// HistoryVersions as catalog.Options takes them (0: the default; -1: none).
type Memory struct {
	TombstoneRetention time.Duration
	HistoryVersions    int
	HistoryMaxAge      time.Duration
}

// MemoryFromEnv reads LAKE_TOMBSTONE_RETENTION (a duration of at least 1h,
// such as 168h, or off: a drop is final) and LAKE_HISTORY_VERSIONS (1 to
// 100000, or off: no history kept) and LAKE_HISTORY_MAX_AGE (a duration of
// at least 1h; unset: no age bound); unset takes the catalog's defaults
// (catalog.DefaultTombstoneRetention, catalog.DefaultHistoryVersions).
func MemoryFromEnv(getenv func(string) string) (Memory, error) {
	var m Memory
	if v := getenv("LAKE_TOMBSTONE_RETENTION"); v == "off" {
		m.TombstoneRetention = -1
	} else if v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Hour {
			return m, fmt.Errorf("LAKE_TOMBSTONE_RETENTION %q: want a duration of at least 1h (such as 168h), or off", v)
		}
		m.TombstoneRetention = d
	}
	if v := getenv("LAKE_HISTORY_VERSIONS"); v == "off" {
		m.HistoryVersions = -1
	} else if v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100_000 {
			return m, fmt.Errorf("LAKE_HISTORY_VERSIONS %q: want 1 to 100000, or off", v)
		}
		m.HistoryVersions = n
	}
	if v := getenv("LAKE_HISTORY_MAX_AGE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Hour {
			return m, fmt.Errorf("LAKE_HISTORY_MAX_AGE %q: want a duration of at least 1h (such as 8760h)", v)
		}
		m.HistoryMaxAge = d
	}
	return m, nil
}
