"""The SMTP face: refuses bad recipients early, stores mail durably, then answers 250."""
