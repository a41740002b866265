package main

import "github.com/hobbs-agent/hobbs/src/vault"

// hobbs run decrypts config.yaml's env mapping with the vault.
func init() { sessionSecrets = vault.SessionEnv }
