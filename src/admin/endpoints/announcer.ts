import { jsonResponse, type AdminEndpoint } from '../handler.js';

/**
 * `/admin/announcer`: the announcement chains that have run through the announcers, as the
 * announcer assembly reports them (JSON).
 */
export function announcerEndpoint(announcements: () => unknown): AdminEndpoint {
  return {
    path: '/admin/announcer',
    description: 'Announcement chains that have run through the announcers.',
    handler: () => jsonResponse(announcements()),
  };
}
