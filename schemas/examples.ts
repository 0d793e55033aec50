/**
 * The examples in the OpenAPI document, which the docs page prefills: each request succeeds as it is, and each answer
 * is the service's own (test/docs.test.ts executes the requests in the docs page and compares).
 */

/**
 * examples/photo.jpg reduced to 32×24 pixels, its camera, capture time and position kept: a real image whose data URI
 * is short enough to show.
 */
export const SMALL_PHOTO_DATA_URI = 'data:image/jpeg;base64,/9j/4QEiRXhpZgAATU0AKgAAAAgABQEPAAIAAAAGAAAASgEQAAIAAAAOAAAAUAITAAMAAAABAAEAAIdpAAQAAAABAAAAXoglAAQAAAABAAAAqAAAAABOSUtPTgBDT09MUElYIFA2MDAwAAAEkAAABwAAAAQwMjMykAMAAgAAABQAAACUkQEABwAAAAQBAgMAoAEAAwAAAAH//wAAAAAAADIwMDg6MTA6MjIgMTY6Mzg6MjAAAAUAAAABAAAABAIDAAAAAQACAAAAAk4AAAAAAgAFAAAAAwAAAOoAAwACAAAAAkUAAAAABAAFAAAAAwAAAQIAAAAAAAAAKwAAAAEAAAAcAAAAAQAAEjwAAAw1AAAACwAAAAEAAAA1AAAAAQAAK3sAAAoG/9sAQwAUDg8SDw0UEhASFxUUGB4yIR4cHB49LC4kMklATEtHQEZFUFpzYlBVbVZFRmSIZW13e4GCgU5gjZeMfZZzfoF8/9sAQwEVFxceGh47ISE7fFNGU3x8fHx8fHx8fHx8fHx8fHx8fHx8fHx8fHx8fHx8fHx8fHx8fHx8fHx8fHx8fHx8fHx8/8AAEQgAGAAgAwEiAAIRAQMRAf/EABgAAQEAAwAAAAAAAAAAAAAAAAQAAgMG/8QAFxAAAwEAAAAAAAAAAAAAAAAAAAIEYf/EABcBAQEBAQAAAAAAAAAAAAAAAAQFAwb/xAAXEQADAQAAAAAAAAAAAAAAAAAAAgMB/9oADAMBAAIRAxEAPwDn0nwQk+DEnwQk+CmsZRuCSfBCT4MSfBCT4GaxYjcwSfBCT4RBmbTkIvpvSfBCT4RBmbSxF9P/2Q=='

/** The service's answer for examples/photo.jpg, the photo that comes with the project (the README shows it too). */
export const PHOTO_METADATA = {
  camera: { make: 'NIKON', model: 'COOLPIX P6000' },
  datetime: '2008-10-22T16:38:20',
  gps: { latitude: 43.4670816, longitude: 11.8845383, altitude: null },
  resolution: { width: 640, height: 480 },
  format: 'jpeg',
  filesize_kb: 12,
  filesize_bytes: 11872,
  provenance: {
    sha256: '2cf983e10861601d3ecf583baec747bc24226c335d33333c9b21a0c3e8724612',
    software: null,
    history: [],
    digital_source_type: null,
    content_credentials: null
  }
}

/** A first message: no conversation_id, which starts a conversation. */
export const CHAT_REQUEST = { message: 'Where is my order?', user_id: 'customer-8812', context: { order_id: 'A-10042' } }

/** The service's answer to CHAT_REQUEST (the conversation id, time and confidence differ per call). */
export const CHAT_REPLY = {
  reply: 'Order A-10042\'s status and tracking are at https://shop.example.com/orders/A-10042/tracking',
  conversation_id: 'f5db1128-a75b-4a9e-8678-7bdab6584465',
  timestamp: '2026-11-26T21:12:06.914Z',
  intent: 'track_order',
  confidence: 0.998,
  links: [{ label: 'Track your order', url: 'https://shop.example.com/orders/A-10042/tracking' }],
  handoff: false
}
