"""The rule engine: rules, the one context every rule reads, the runner, findings and the report."""
