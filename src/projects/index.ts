// The projects capability, assembled: projects and their API keys.
import { projectRoutes } from './routes';
import { projectService, type ProjectServiceDependencies } from './service';

export function createProjects(dependencies: ProjectServiceDependencies) {
  return { routes: projectRoutes(projectService(dependencies)) };
}
