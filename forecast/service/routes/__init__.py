"""One router per resource: forecasts (listing, intervals, headline, downloads), query, walls."""
