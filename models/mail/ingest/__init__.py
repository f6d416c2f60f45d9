"""What reads incoming mail: routing and storing it, parsing, extraction, catch-all domains."""
