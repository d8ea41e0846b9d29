"""Running untrusted checks in containers: protocol, backends, warm pool, fault recovery."""
