"""aclnn operators: one module per operator, each with its two phases."""
