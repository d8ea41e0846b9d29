"""Online scoring's front door: OTLP spans in, mapped to rows, stored once per span."""
