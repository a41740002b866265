package config

// Backup is hobbs backup's settings (docs/backup.md).
type Backup struct {
	Keep BackupKeep `yaml:"keep" json:"keep"`
}

// BackupKeep is the retention applied after each backup (restic forget
// --keep-daily/--keep-weekly/--keep-monthly, per device): the newest
// snapshot of each of the last Daily days, Weekly weeks and Monthly
// months stays, the others go. All zero keeps every snapshot.
type BackupKeep struct {
	Daily   int `yaml:"daily" json:"daily"`
	Weekly  int `yaml:"weekly" json:"weekly"`
	Monthly int `yaml:"monthly" json:"monthly"`
}

// DefaultBackup is backup: as templates/config.yaml writes it.
func DefaultBackup() Backup { return Backup{Keep: BackupKeep{Daily: 7, Weekly: 4, Monthly: 12}} }

func (c *Config) validateBackup(bad func(keys []string, format string, args ...any)) {
	for name, v := range map[string]int{"daily": c.Backup.Keep.Daily, "weekly": c.Backup.Keep.Weekly, "monthly": c.Backup.Keep.Monthly} {
		if v < 0 {
			bad([]string{"backup", "keep", name}, "must be 0 or more, got %d", v)
		}
	}
}
